package cudart

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFakeKernelLaunch runs fakecuda.c's fill through the binding: the
// parameter array reaches C with each value at its address.
func TestFakeKernelLaunch(t *testing.T) {
	l := openFake(t)
	m, err := l.ModuleLoadData(0, testPTX)
	require.NoError(t, err)
	fn, err := l.ModuleGetFunction(0, m, "fill")
	require.NoError(t, err)
	p, err := l.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, p)) }()
	require.NoError(t, l.Memset(0, p, 0, 64))
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, l.LaunchKernel(0, fn, Dim1(2), Dim1(5), 0, s, Arg(p), Arg[uint32](12), Arg[uint32](0xc0ffee)))
	require.NoError(t, l.StreamSynchronize(0, s))
	got := make([]byte, 64)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(p, 64), DeviceToHost))
	for i := range 16 {
		want := uint32(0)
		if i < 10 {
			want = 0xc0ffee
		}
		assert.Equal(t, want, binary.LittleEndian.Uint32(got[4*i:]), "word %d: 10 threads fill 10 of 12", i)
	}
	require.NoError(t, l.StreamDestroy(0, s))

	_, err = l.ModuleGetFunction(0, m, "mixed")
	assert.ErrorIs(t, err, ErrNotFound, "declared in the PTX, but the library has no such kernel")
	assert.Contains(t, err.Error(), "CUDA_ERROR_NOT_FOUND")
	require.NoError(t, l.ModuleUnload(0, m))
	err = l.LaunchKernel(0, fn, Dim1(1), Dim1(1), 0, 0, Arg(p), Arg[uint32](1), Arg[uint32](1))
	assert.ErrorIs(t, err, ErrInvalidResourceHandle, "the function of an unloaded module")
}

func TestFakeModuleJITLog(t *testing.T) {
	l := openFake(t)
	_, err := l.ModuleLoadData(0, testPTX+"\nINVALID;\n")
	assert.ErrorIs(t, err, ErrInvalidPTX)
	assert.EqualError(t, err, "cudart: cuModuleLoadDataEx(443 B of PTX, entries fill, mixed, empty) on device 0: CUDA_ERROR_INVALID_PTX (218): fake driver message; JIT log: fake JIT: line 7: INVALID is not an instruction")
}

func TestFakeEventsAndGraphs(t *testing.T) {
	l := openFake(t)
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.StreamDestroy(0, s)) }()
	a, err := l.EventCreate(0)
	require.NoError(t, err)
	b, err := l.EventCreate(0)
	require.NoError(t, err)
	_, err = l.EventElapsedTime(0, a, b)
	assert.ErrorIs(t, err, ErrInvalidResourceHandle, "neither was recorded")
	require.NoError(t, l.EventRecord(0, a, s))
	require.NoError(t, l.StreamWaitEvent(0, 0, a))
	require.NoError(t, l.EventRecord(0, b, s))
	done, err := l.EventQuery(0, b)
	require.NoError(t, err)
	assert.False(t, done, "cudaErrorNotReady is not done")
	done, err = l.EventQuery(0, b)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, l.EventSynchronize(0, b))
	d, err := l.EventElapsedTime(0, a, b)
	require.NoError(t, err)
	assert.Equal(t, 1500_000, int(d), "1.5 ms, read as a float")
	require.NoError(t, l.EventDestroy(0, a))
	require.NoError(t, l.EventDestroy(0, b))

	require.ErrorIs(t, l.StreamBeginCapture(0, s, 3), ErrInvalidValue, "the mode reaches C")
	require.NoError(t, l.StreamBeginCapture(0, s, CaptureModeRelaxed))
	assert.ErrorIs(t, l.StreamBeginCapture(0, 0, CaptureModeGlobal), ErrStreamCaptureUnsupported)
	g, err := l.StreamEndCapture(0, s)
	require.NoError(t, err)
	_, err = l.StreamEndCapture(0, s)
	assert.ErrorIs(t, err, ErrStreamCaptureUnmatched)
	counts, err := CountGraphNodes(l, 0, g)
	require.NoError(t, err)
	assert.Equal(t, GraphNodeCounts{GraphNodeKernel: 1, GraphNodeMemAlloc: 1, GraphNodeMemFree: 1}, counts, "the count, then the nodes, through C")
	assert.Equal(t, 2, counts.Memory())
	_, err = l.GraphNodes(0, 0)
	assert.ErrorIs(t, err, ErrInvalidValue)
	_, err = l.GraphNodeType(0, 0)
	assert.ErrorIs(t, err, ErrInvalidValue)
	x, err := l.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, l.GraphLaunch(0, x, s))
	require.NoError(t, l.GraphExecDestroy(0, x))
	require.NoError(t, l.GraphDestroy(0, g))
}
