package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

func TestDefaultRunOnTheFake(t *testing.T) {
	if raceEnabled {
		t.Skip("the plain run covers the default flags; under the race detector they take minutes, and TestConcurrentRequests runs instead")
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake"}, &out, &errOut), errOut.String())
	s := out.String()
	for _, want := range []string{
		"model 64 -> 256 -> 256 -> 64, FP32",
		"one CUDA graph a request, batch 1:", "call by call, batch 32:",
		"slots=1", "slots=2", "slots=4", "slots=8", "mutex pool",
		"cudaMallocAsync, 1 client", "cudaMallocAsync, 2 clients", "cudaMallocAsync, 4 clients", "cudaMallocAsync, 8 clients",
		"clients  runs  requests/s  range  wait p50  wait p99  service p50  service p99",
		"slots=N over cudaMallocAsync with as many requests in flight", "slots=1 / 1 client  slots=2 / 2 clients  slots=4 / 4 clients  slots=8 / 8 clients",
		"for reference, over cudaMallocAsync with 8 clients", "targets:", "memory nodes in the slots' and mutex pool's request graphs: 0 at most", "launch-bound: 1 client, batch 1:", "slot, one graph / cudaMallocAsync, call by call:",
		"same launch mode (1 such pair):", "cuBLAS handles 8:", "the run took",
		// The fake's cuBLAS sums in float64 and rounds once, as the
		// reference does: its outputs are the reference's.
		"worst absolute 0, worst relative 0;",
		"(fake runtime: not a GPU timing)",
	} {
		assert.Contains(t, s, want)
	}
	assert.Regexp(t, `slots=8 +batch 32  memory nodes 0`, s)
	assert.NotContains(t, s, "dumped to")
	assert.Contains(t, errOut.String(), "mlp: call by call, batch 32, slots=8 then cudaMallocAsync, 8 clients, run 1 of 1: 12 requests each...", "progress on stderr")
}

func TestConcurrentRequests(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-slots", "2,8", "-batches", "1,8", "-requests", "8"}, &out, &errOut), errOut.String())
	for _, want := range []string{"slots=2", "slots=8", "mutex pool", "worst absolute 0, worst relative 0;"} {
		assert.Contains(t, out.String(), want)
	}
}

// The slots' graphs hold no memory node; cudaMallocAsync's, captured the
// same way, do, so the count sees them.
func TestRequestGraphsHoldNoMemoryNode(t *testing.T) {
	lib, m := fakeModel(t)
	batches := []int{1, 8, 32}
	sb, err := newSlotsBackend(m, lib, 2, batches, true)
	require.NoError(t, err)
	defer func() { assert.NoError(t, sb.close()) }()
	ab, err := newAsyncBackend(m, lib, 2, batches, true)
	require.NoError(t, err)
	defer func() { assert.NoError(t, ab.close()) }()
	for _, rows := range batches {
		c := sb.nodes()[rows]
		assert.Equal(t, 0, c.Memory(), "slots, batch %d: %v", rows, c)
		assert.Equal(t, 2*layers, c[cudart.GraphNodeKernel], "a GEMM and a bias_act a layer")
		assert.Positive(t, ab.nodes()[rows].Memory(), "cudaMallocAsync, batch %d", rows)
	}
}

func TestAWrongOutputIsCaught(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runWith([]string{"-runtime=fake", "-slots", "1", "-launch", "graph", "-requests", "2"}, &out, &errOut, func(c *config) { c.corruptParams = true })
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "output differs from the CPU reference")
	assert.Contains(t, errOut.String(), "check before")
}

func TestDumpRoundTrips(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-slots", "1", "-launch", "graph", "-requests", "2", "-dump", dir}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "dumped to "+dir)
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var mf manifest
	require.NoError(t, json.Unmarshal(raw, &mf))
	require.Equal(t, "column-major", mf.Layout)
	require.Len(t, mf.Layers, 3)
	assert.Equal(t, []int{256, 64}, mf.Layers[0].Weights.Shape)
	require.Len(t, mf.Batches, 3)
	// Recompute from the files and the manifest alone.
	read := func(tn tensor) []float64 {
		b, err := os.ReadFile(filepath.Join(dir, tn.File))
		require.NoError(t, err)
		n := 1
		for _, d := range tn.Shape {
			n *= d
		}
		require.Len(t, b, 4*n, tn.File)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return v
	}
	for _, bf := range mf.Batches {
		x, cols := read(bf.Input), bf.Input.Shape[1]
		require.Equal(t, bf.Batch, cols)
		for _, l := range mf.Layers {
			w, bias := read(l.Weights), read(l.Bias)
			rows, k := l.Weights.Shape[0], l.Weights.Shape[1]
			y := make([]float64, rows*cols)
			for c := range cols {
				for i := range rows {
					var acc float64
					for j := range k {
						acc += w[i+j*rows] * x[j+c*k]
					}
					v := float64(float32(acc)) + bias[i]
					if l.Activation == "relu" {
						v = max(v, 0)
					}
					y[i+c*rows] = v
				}
			}
			x = y
		}
		got := read(bf.Output)
		require.Len(t, got, len(x))
		nonzero := 0
		for i := range got {
			assert.InDelta(t, x[i], got[i], max(mf.Tolerance.Absolute, mf.Tolerance.Relative*math.Abs(x[i])), "batch %d, output %d", bf.Batch, i)
			if got[i] != 0 {
				nonzero++
			}
		}
		assert.Greater(t, nonzero, len(got)/2, "outputs that mean something")
	}
}

func TestHelpPrintsAParagraphThenTheFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	h := errOut.String()
	assert.True(t, strings.HasPrefix(h, "mlp: a multi-layer perceptron"))
	assert.Less(t, strings.Index(h, "Flags:"), strings.Index(h, "-batches"))
	assert.Less(t, strings.Index(h, "grows as -requests x -repeat"), strings.Index(h, "Flags:"), "how to keep a GPU run short")
	assert.Contains(t, h, "-repeat")
	assert.Empty(t, out.String())
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-slots", "0"}, {"-slots", "2,2"}, {"-batches", "x"}, {"-launch", "never"}, {"-requests", "0"},
		{"-clients", "2000"}, {"-repeat", "0"}, {"-repeat", "101"}, {"-scale", "3"}, {"-scale", "32"}, {"-copy", "1024"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
		assert.Contains(t, errOut.String(), "mlp: ", "%v", args)
	}
}

// fakeModel is the model at -scale 16 on a fake runtime, with its cuBLAS.
func fakeModel(t *testing.T) (*cublas.Library, *model) {
	t.Helper()
	f := cudarttest.NewFake()
	lib, err := cublas.Open(f)
	require.NoError(t, err)
	var dims [4]int
	for i, d := range fullDims {
		dims[i] = d / 16
	}
	m, err := newModel(f, dims, 1)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.close()) })
	return lib, m
}
