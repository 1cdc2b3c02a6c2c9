package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/examples/loadgen"
)

// runFixed sends perClient requests from each of clients goroutines, each
// its next once the last is answered: request j of client c is the same
// on every rank of a job, so that the ranks of one process per GPU run the
// same requests on the same group in the same order, as NCCL requires.
// The first error stops every client after its request in flight.
func runFixed(clients, perClient int, do func(c, j int) (waited time.Duration, err error)) (loadgen.Result, error) {
	n := clients * perClient
	lat, wait := make([]time.Duration, n), make([]time.Duration, n)
	errs := make([]error, clients)
	var failed atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perClient && !failed.Load(); j++ {
				t0 := time.Now()
				waited, err := do(c, j)
				if err != nil {
					errs[c] = fmt.Errorf("client %d, request %d: %w", c, j, err)
					failed.Store(true)
					return
				}
				i := c*perClient + j
				lat[i], wait[i] = time.Since(t0)-waited, waited
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return loadgen.Result{}, err
	}
	return loadgen.Result{Requests: n, Elapsed: elapsed, PerSecond: float64(n) / elapsed.Seconds(),
		Wait: loadgen.PercentilesOf(wait), Service: loadgen.PercentilesOf(lat)}, nil
}
