package main

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// step is one kernel of the chain: out = a*in + b (affine) or in + in2 (add).
type step struct {
	kernel   string
	out, in  int // activation indices
	in2      int // add's second input
	a, b     float32
	describe string
}

// chain is the network: six activations, one residual connection. Step 0 is
// the copy in, step len(chain)+1 the copy out; activation i is written at
// step i and read last at lastUse[i].
var chain = []step{
	{kernel: "affine", out: 1, in: 0, a: 2, b: 1, describe: "x1 = 2*x0 + 1"},
	{kernel: "affine", out: 2, in: 1, a: 0.5, b: -3, describe: "x2 = 0.5*x1 - 3"},
	{kernel: "add", out: 3, in: 2, in2: 0, describe: "x3 = x2 + x0 (residual)"},
	{kernel: "affine", out: 4, in: 3, a: -1.5, b: 0.25, describe: "x4 = -1.5*x3 + 0.25"},
	{kernel: "affine", out: 5, in: 4, a: 0.75, b: 2, describe: "x5 = 0.75*x4 + 2"},
}

// activations is the number of device buffers, x0 to x5.
const activations = 6

// lastUse is the step at which each activation is read for the last time: x0
// feeds the residual at step 3, x5 is copied out at step 6.
var lastUse = func() [activations]int {
	var last [activations]int
	for i := range last {
		last[i] = i
	}
	for s, st := range chain {
		last[st.in] = max(last[st.in], s+1)
		if st.kernel == "add" {
			last[st.in2] = max(last[st.in2], s+1)
		}
	}
	last[activations-1] = len(chain) + 1
	return last
}()

// buffers is one plan of the pipeline's requests.
type buffers struct {
	in, out *pool.Buffer // pinned staging
	x       [activations]*pool.Buffer
}

// plan queues every request, with its lifetime, and commits.
func plan(p *pool.Pool, n uint32) (*buffers, error) {
	size := 4 * uint64(n)
	var b buffers
	var err error
	if b.in, err = p.WantHost(size, pool.Name("input.staging")); err != nil {
		return nil, err
	}
	if b.out, err = p.WantHost(size, pool.Name("output.staging")); err != nil {
		return nil, err
	}
	for i := range b.x {
		if b.x[i], err = p.WantDevice(size, pool.Name(fmt.Sprintf("x%d", i)), pool.Live(i, lastUse[i])); err != nil {
			return nil, err
		}
	}
	return &b, p.Commit()
}

// addresses are where a plan put the buffers: the graph bakes them in.
type addresses struct {
	in, out []byte
	x       [activations]cudart.DevicePtr
}

func (b *buffers) addresses() (addresses, error) {
	var a addresses
	var err error
	if a.in, err = b.in.Bytes(); err != nil {
		return a, err
	}
	if a.out, err = b.out.Bytes(); err != nil {
		return a, err
	}
	for i, x := range b.x {
		if a.x[i], err = x.Ptr(); err != nil {
			return a, err
		}
	}
	return a, nil
}

// same reports whether two plans put every buffer at the same address.
func (a addresses) same(o addresses) bool {
	return &a.in[0] == &o.in[0] && &a.out[0] == &o.out[0] && a.x == o.x
}

// reference is the chain computed on the CPU.
func reference(in []float32) []float32 {
	var x [activations][]float32
	x[0] = in
	for _, st := range chain {
		out := make([]float32, len(in))
		for i := range out {
			if st.kernel == "add" {
				out[i] = add(x[st.in][i], x[st.in2][i])
			} else {
				out[i] = affine(st.a, x[st.in][i], st.b)
			}
		}
		x[st.out] = out
	}
	return x[activations-1]
}
