package mlpmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/floats"
)

func TestTheSameSeedGivesTheSameModel(t *testing.T) {
	dims := Scaled(16)
	a, b, c := New(dims, 1), New(dims, 1), New(dims, 2)
	assert.Equal(t, a.Values, b.Values)
	assert.NotEqual(t, a.Values, c.Values)
	assert.Len(t, a.W(1), dims[2]*dims[1])
	assert.Len(t, a.B(2), dims[3])
	assert.Equal(t, uint64(4*len(a.Values)), a.Bytes())
}

// A dump of the reference's outputs recomputes; one output moved past the
// tolerance does not.
func TestDumpChecks(t *testing.T) {
	p := New(Scaled(16), 1)
	var batches []Batch
	for _, rows := range []int{1, 3} {
		in := Inputs(p.Dims, 1, rows, 1)[0]
		batches = append(batches, Batch{Rows: rows, Input: in, Output: p.Reference(in, rows)})
	}
	dir := t.TempDir()
	require.NoError(t, Dump(dir, p, 1, batches))
	mf, err := CheckDump(dir)
	require.NoError(t, err)
	assert.Equal(t, "column-major", mf.Layout)
	assert.Len(t, mf.Layers, Layers)
	assert.Equal(t, []int{256, 64}, mf.Layers[0].Weights.Shape)

	batches[1].Output[2] += 1e-3
	dir = t.TempDir()
	require.NoError(t, Dump(dir, p, 1, batches))
	_, err = CheckDump(dir)
	assert.ErrorContains(t, err, "batch 3, output 2")
}

func TestWorstFindsTheFirstMismatch(t *testing.T) {
	var w Worst
	require.NoError(t, w.Compare([]float32{1, 2}, []float32{1, 2.0001}))
	err := w.Compare([]float32{1, 5}, []float32{1, 4})
	assert.ErrorIs(t, err, ErrMismatch)
	assert.ErrorContains(t, err, "element 1 is 5, want 4")
	assert.InDelta(t, 1/(4*RelTol), w.Ratio(), 1e-6)
	assert.Contains(t, w.String(), "4 outputs compared")
}

// A request stages its input, keeps its output where asked, and checks it
// in full into Worst or, timed, at samples that move with the request's
// number: an output wrong at one element passes the samples that miss it.
func TestRequestChecksItsOutput(t *testing.T) {
	p := New(Scaled(16), 1)
	w := NewWorkload(p, 1, 2)
	require.Len(t, w.Inputs, Variants)
	x := w.Request(Variants+1, nil)
	assert.Equal(t, w.Inputs[1], x.In, "request i is variant i mod Variants")
	staging := make([]byte, len(x.In))
	require.NoError(t, x.Fill(staging))
	assert.Equal(t, x.In, staging)

	out := floats.Bytes(x.Want)
	x.Keep = true
	require.NoError(t, x.Read(out))
	assert.Equal(t, x.Want, x.Got)

	bad := append([]float32(nil), x.Want...)
	bad[0] += 1000
	missed := w.Request(1, nil) // samples from element 1 on, with a stride over 1
	require.Greater(t, len(bad)/Samples, 1)
	assert.NoError(t, missed.Read(floats.Bytes(bad)), "a timed request reads samples only")
	hit := w.Request(0, nil)
	assert.ErrorIs(t, hit.Read(floats.Bytes(bad)), ErrMismatch)
	var worst Worst
	full := w.Request(1, &worst)
	assert.ErrorIs(t, full.Read(floats.Bytes(bad)), ErrMismatch, "a full check reads every element")
}
