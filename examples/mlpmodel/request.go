package mlpmodel

import (
	"fmt"

	"github.com/cudapool/cudapool/examples/floats"
)

// Variants is how many different inputs each batch size has.
const Variants = 2

// Samples is how many output elements a timed request checks.
const Samples = 16

// Workload is the requests of one batch size: a few inputs, staged as
// bytes, and their outputs on the CPU.
type Workload struct {
	Rows   int
	Inputs [][]byte
	Want   [][]float32
}

// NewWorkload draws the Variants inputs of rows rows from seed and computes
// their outputs with p on the CPU.
func NewWorkload(p *Params, seed uint64, rows int) *Workload {
	w := &Workload{Rows: rows}
	for _, in := range Inputs(p.Dims, seed, rows, Variants) {
		w.Inputs = append(w.Inputs, floats.Bytes(in))
		w.Want = append(w.Want, p.Reference(in, rows))
	}
	return w
}

// Request is request i of w: input variant i of the batch's, checked into
// full, or at Samples elements where full is nil.
func (w *Workload) Request(i int, full *Worst) Request {
	v := i % len(w.Inputs)
	return Request{In: w.Inputs[v], Want: w.Want[v], Full: full, At: i}
}

// Request is one request's data: the whole input staged, and its output
// compared with the CPU's, in full (the untimed passes, into Full) or at
// Samples elements (the timed requests).
type Request struct {
	In   []byte
	Want []float32
	Full *Worst    // nil: sampled
	At   int       // the first sample, moving from one request to the next
	Got  []float32 // the output, kept where Keep is set
	Keep bool
}

// Fill writes the request's input into staging.
func (x *Request) Fill(staging []byte) error {
	copy(staging, x.In)
	return nil
}

// Read takes the request's output from out and checks it.
func (x *Request) Read(out []byte) error {
	got := floats.Of(out[:4*len(x.Want)])
	if x.Keep {
		x.Got = got
	}
	if x.Full != nil {
		return x.Full.Compare(got, x.Want)
	}
	stride := max(1, len(x.Want)/Samples)
	for i := x.At % stride; i < len(x.Want); i += stride {
		if d := DeviationOf(got[i], x.Want[i]); d.Ratio > 1 {
			return fmt.Errorf("%w: element %d is %v, want %v (a timed request's sample)", ErrMismatch, i, got[i], x.Want[i])
		}
	}
	return nil
}
