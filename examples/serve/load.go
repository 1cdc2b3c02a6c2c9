package main

import (
	"bytes"
	"context"
	"time"

	"github.com/cudapool/cudapool/examples/floats"
)

// workload is the requests the load generator sends: request i has
// mix[i%len(mix)] rows and one of a few inputs, whose outputs the CPU
// computed once.
type workload struct {
	mix    []int
	inputs map[int][][]byte // by rows: the inputs
	want   map[int][][]byte // by rows: their outputs
}

// variants is how many different inputs each batch size has.
const variants = 8

func newWorkload(m *model, mix []int) *workload {
	w := &workload{mix: mix, inputs: map[int][][]byte{}, want: map[int][][]byte{}}
	for _, rows := range mix {
		if w.inputs[rows] != nil {
			continue
		}
		for v := range variants {
			in := make([]float32, int(m.n)*rows)
			for i := range in {
				in[i] = float32((i*(v+3))%2001-1000) / 1000
			}
			w.inputs[rows] = append(w.inputs[rows], floats.Bytes(in))
			w.want[rows] = append(w.want[rows], floats.Bytes(m.reference(in)))
		}
	}
	return w
}

// request is request i's rows, input and expected output.
func (w *workload) request(i int) (rows int, in, want []byte) {
	rows = w.mix[i%len(w.mix)]
	v := i / len(w.mix) % variants
	return rows, w.inputs[rows][v], w.want[rows][v]
}

// exchange moves one request's data through the staging buffers a
// backend hands it, while the request holds them.
type exchange interface {
	// fill writes the request's input into staging.
	fill(staging []byte) error
	// read takes the request's output from out.
	read(out []byte) error
}

// fullCheck stages the whole input and compares the whole output with the
// CPU's: the check passes, untimed.
type fullCheck struct{ in, want []byte }

func (x *fullCheck) fill(staging []byte) error {
	copy(staging, x.in)
	return nil
}

func (x *fullCheck) read(out []byte) error {
	if !bytes.Equal(out[:len(x.want)], x.want) {
		return mismatch(out[:len(x.want)], x.want)
	}
	return nil
}

// samples is how many elements a timed request stages and checks at
// least (all of a smaller batch); fewer than twice as many.
const samples = 16

// sampledCheck stages and checks samples elements or so, spread over the
// batch, at positions that move from one request to the next: the timed
// requests. The kernels are elementwise, so an output element depends on
// the same input element only, whatever the rest of the staging buffer
// holds from earlier requests; a request that ran on another's buffers or
// input shows in its samples.
type sampledCheck struct {
	in, want      []byte
	first, stride int // byte offsets, multiples of 4
}

// at points x at request i's input and output.
func (x *sampledCheck) at(i int, in, want []byte) {
	x.in, x.want = in, want
	x.stride = max(4, len(in)/samples/4*4)
	x.first = i % (x.stride / 4) * 4
}

func (x *sampledCheck) fill(staging []byte) error {
	for p := x.first; p+4 <= len(x.in); p += x.stride {
		copy(staging[p:p+4], x.in[p:p+4])
	}
	return nil
}

func (x *sampledCheck) read(out []byte) error {
	for p := x.first; p+4 <= len(x.want); p += x.stride {
		if !bytes.Equal(out[p:p+4], x.want[p:p+4]) {
			return mismatchAt(out, x.want, p)
		}
	}
	return nil
}

// checks are each client's exchange for the request it sends, reused
// from one request to the next: whole (the check passes) or sampled (the
// timed requests).
type checks struct {
	full    bool
	fulls   []fullCheck
	sampled []sampledCheck
}

func newChecks(clients int, full bool) *checks {
	return &checks{full: full, fulls: make([]fullCheck, clients), sampled: make([]sampledCheck, clients)}
}

// of is client c's exchange for request i.
func (k *checks) of(c, i int, in, want []byte) exchange {
	if k.full {
		k.fulls[c] = fullCheck{in, want}
		return &k.fulls[c]
	}
	k.sampled[c].at(i, in, want)
	return &k.sampled[c]
}

// inProcess sends request i straight to the backend, checking every
// output in full when full is set, else samples of it.
func inProcess(b backend, w *workload, clients int, full bool) func(c, i int) (time.Duration, error) {
	k := newChecks(clients, full)
	return func(c, i int) (time.Duration, error) {
		rows, in, want := w.request(i)
		return b.serve(context.Background(), c, rows, k.of(c, i, in, want))
	}
}
