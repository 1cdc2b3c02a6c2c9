package main

import (
	"fmt"

	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// workload is the requests of one batch size: a few inputs, staged as
// bytes, and their outputs on the CPU.
type workload struct {
	rows   int
	inputs [][]byte
	want   [][]float32
}

// variants is how many different inputs each batch size has.
const variants = 2

func newWorkload(m *model, seed uint64, rows int) *workload {
	w := &workload{rows: rows}
	for _, in := range mlpmodel.Inputs(m.Dims, seed, rows, variants) {
		w.inputs = append(w.inputs, floats.Bytes(in))
		w.want = append(w.want, m.Reference(in, rows))
	}
	return w
}

// exchange moves one request's data through the staging buffers a backend
// hands it, while the request holds them.
type exchange interface {
	// fill writes the request's input into staging.
	fill(staging []byte) error
	// read takes the request's output from out.
	read(out []byte) error
}

// request is what every request does with its data: the whole input
// staged, and its output compared with the CPU's, in full (the untimed
// check passes, into worst) or at samples elements (the timed requests).
type request struct {
	in   []byte
	want []float32
	full *mlpmodel.Worst // nil: sampled
	at   int             // the first sample, moving from one request to the next
}

// samples is how many output elements a timed request checks.
const samples = 16

func (x *request) fill(staging []byte) error {
	copy(staging, x.in)
	return nil
}

func (x *request) read(out []byte) error {
	got := floats.Of(out[:4*len(x.want)])
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

// requests makes each client's exchange for request i, reused from one
// request to the next.
func requests(w *workload, clients int, full *mlpmodel.Worst) func(c, i int) exchange {
	xs := make([]request, clients)
	return func(c, i int) exchange {
		v := i % len(w.inputs)
		xs[c] = request{in: w.inputs[v], want: w.want[v], full: full, at: i}
		return &xs[c]
	}
}
