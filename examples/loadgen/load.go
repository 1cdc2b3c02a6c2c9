package loadgen

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one measured run of requests.
type Result struct {
	// Name is the configuration measured, for the tables; Run leaves it
	// empty.
	Name      string
	Requests  int
	Elapsed   time.Duration
	PerSecond float64
	// Wait is the time a request waited for what the backend shares (a
	// slot, a mutex); Service is the rest of its latency.
	Wait, Service Percentiles
}

// Run sends requests requests from clients goroutines, each sending its
// next request once the last is answered, and returns when all are
// answered or one failed. do sends request i (0 to requests-1, each once)
// for client c (0 to clients-1), checks the answer and says how long the
// request waited for what the backend shares; the rest of its latency is
// its service. The first error stops every client after its request in
// flight, and is returned with the request's index.
func Run(clients, requests int, do func(c, i int) (waited time.Duration, err error)) (Result, error) {
	var next atomic.Int64
	return run(clients, requests, func(int, int) (i, arg int) {
		i = int(next.Add(1) - 1)
		return i, i
	}, do, func(_, i int) string { return fmt.Sprintf("request %d", i) })
}

// RunFixed is Run with each client's requests fixed: client c sends
// perClient requests, do(c, j) for j from 0 to perClient-1 in order, so
// that request j of client c is the same in every process that runs it
// (the ranks of a job, which must run the same collectives in the same
// order). The first error is returned with the client and the request.
func RunFixed(clients, perClient int, do func(c, j int) (waited time.Duration, err error)) (Result, error) {
	return run(clients, clients*perClient, func(c, k int) (i, arg int) {
		if k >= perClient {
			return clients * perClient, k
		}
		return c*perClient + k, k
	}, do, func(c, j int) string { return fmt.Sprintf("client %d, request %d", c, j) })
}

// run is Run and RunFixed: client c's k-th request is result i of the
// requests, sent as do(c, arg); an i past requests ends the client. name
// says which request failed.
func run(clients, requests int, next func(c, k int) (i, arg int), do func(c, arg int) (time.Duration, error), name func(c, arg int) string) (Result, error) {
	lat := make([]time.Duration, requests)
	wait := make([]time.Duration, requests)
	var failed atomic.Bool
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; !failed.Load(); k++ {
				i, arg := next(c, k)
				if i >= requests {
					return
				}
				t0 := time.Now()
				waited, err := do(c, arg)
				if err != nil {
					errs[c] = fmt.Errorf("%s: %w", name(c, arg), err)
					failed.Store(true)
					return
				}
				lat[i], wait[i] = time.Since(t0), waited
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	for i := range lat {
		lat[i] -= min(wait[i], lat[i])
	}
	return Result{
		Requests: requests, Elapsed: elapsed, PerSecond: float64(requests) / elapsed.Seconds(),
		Wait: PercentilesOf(wait), Service: PercentilesOf(lat),
	}, nil
}

// Ratio formats r's requests/s over base's ("1.25x"), or "-" where either
// is nil: a configuration a run did not measure.
func Ratio(r, base *Result) string {
	if r == nil || base == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r.PerSecond/base.PerSecond)
}
