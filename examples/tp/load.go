package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/loadgen"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// variants is how many different inputs each batch size has.
const variants = 2

// samples is how many output elements a timed request checks.
const samples = 16

// workload is the requests of one batch size: a few inputs, staged as
// bytes, and their outputs on the CPU.
type workload struct {
	rows   int
	inputs [][]byte
	want   [][]float32
}

func newWorkload(p *mlpmodel.Params, seed uint64, rows int) *workload {
	w := &workload{rows: rows}
	for _, in := range mlpmodel.Inputs(p.Dims, seed, rows, variants) {
		w.inputs = append(w.inputs, floats.Bytes(in))
		w.want = append(w.want, p.Reference(in, rows))
	}
	return w
}

// request is one request's data: the whole input staged, and its output
// compared with the CPU's, in full (the untimed passes, into full) or at
// samples elements (the timed requests).
type request struct {
	in   []byte
	want []float32
	full *mlpmodel.Worst // nil: sampled
	at   int             // the first sample, moving from one request to the next
	got  []float32       // the output, kept where keep is set
	keep bool
}

func (x *request) fill(staging []byte) error {
	copy(staging, x.in)
	return nil
}

func (x *request) read(out []byte) error {
	got := floats.Of(out[:4*len(x.want)])
	if x.keep {
		x.got = got
	}
	if x.full != nil {
		return x.full.Compare(got, x.want)
	}
	stride := max(1, len(x.want)/samples)
	for i := x.at % stride; i < len(x.want); i += stride {
		if d := mlpmodel.DeviationOf(got[i], x.want[i]); d.Ratio > 1 {
			return fmt.Errorf("%w: element %d is %v, want %v (a timed request's sample)", mlpmodel.ErrMismatch, i, got[i], x.want[i])
		}
	}
	return nil
}

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
