package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"

	"github.com/cudapool/cudapool/examples/cli/clitest"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

func TestDefaultRunOnTheFake(t *testing.T) {
	if raceEnabled {
		t.Skip("the plain run covers the default flags; under the race detector they take minutes, and TestConcurrentRequests runs instead")
	}
	s, stderr := clitest.OK(t, run, "-runtime=fake")
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
	assert.Contains(t, stderr, "mlp: call by call, batch 32, slots=8 then cudaMallocAsync, 8 clients, run 1 of 1: 12 requests each...", "progress on stderr")
}

func TestConcurrentRequests(t *testing.T) {
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-slots", "2,8", "-batches", "1,8", "-requests", "8")
	for _, want := range []string{"slots=2", "slots=8", "mutex pool", "worst absolute 0, worst relative 0;"} {
		assert.Contains(t, stdout, want)
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
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-slots", "1", "-launch", "graph", "-requests", "2", "-dump", dir)
	assert.Contains(t, stdout, "dumped to "+dir)
	mf, err := mlpmodel.CheckDump(dir)
	require.NoError(t, err, "recomputed from the files and the manifest alone")
	require.Len(t, mf.Layers, 3)
	assert.Equal(t, []int{256, 64}, mf.Layers[0].Weights.Shape)
	require.Len(t, mf.Batches, 3)
}

func TestHelpPrintsAParagraphThenTheFlags(t *testing.T) {
	require.True(t, strings.HasPrefix(about, "mlp: a multi-layer perceptron"))
	assert.Contains(t, about, "grows as -requests x -repeat", "how to keep a GPU run short")
	clitest.Help(t, run, about, "-batches", "-repeat")
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
	m, err := newModel(f, mlpmodel.Scaled(16), 1)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.close()) })
	return lib, m
}
