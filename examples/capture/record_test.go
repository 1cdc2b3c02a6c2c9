package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// memset is a capture's record: one memset of n bytes of value at p on s.
func memset(rt cudart.Full, p cudart.DevicePtr, value byte, n uint64, s cudart.Stream) func() error {
	return func() error { return rt.MemsetAsync(0, p, value, n, s) }
}

// fakeStream is a strict fake runtime (memcheck, leaks checked at the
// end) and a stream on device 0, destroyed at the end.
func fakeStream(t *testing.T) (*cudarttest.Fake, cudart.Stream) {
	rt := cudarttest.NewFakeT(t)
	s, err := rt.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.StreamDestroy(0, s)) })
	return rt, s
}

func TestInstantiateRecordsWhatRunsAtLaunch(t *testing.T) {
	rt, s := fakeStream(t)
	p, err := rt.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.Free(0, p)) }()
	on := []Stream{{0, s}}

	xs, counts, err := Instantiate(rt, on, memset(rt, p, 7, 64, s))
	require.NoError(t, err)
	require.Len(t, xs, 1)
	assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemset: 1}, counts[0])
	got := make([]byte, 64)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, 64), cudart.DeviceToHost))
	assert.Equal(t, make([]byte, 64), got, "captured, not run")
	require.NoError(t, rt.GraphLaunch(0, xs[0], s))
	require.NoError(t, rt.StreamSynchronize(0, s))
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, 64), cudart.DeviceToHost))
	assert.Equal(t, byte(7), got[63])
	require.NoError(t, Destroy(rt, on, xs))
}

// A failed record or instantiation ends the capture, leaves the stream
// usable and leaks nothing (NewFakeT's cleanup checks).
func TestAFailureLeavesNoGraph(t *testing.T) {
	rt, s := fakeStream(t)
	on := []Stream{{0, s}}
	_, err := Record(rt, on, func() error { return assert.AnError })
	require.ErrorIs(t, err, assert.AnError)

	require.NoError(t, rt.FailCall("cudaGraphInstantiate", cudart.ErrInvalidValue.Code))
	_, _, err = Instantiate(rt, on, func() error { return nil })
	require.ErrorIs(t, err, cudart.ErrInvalidValue)

	graphs, err := Record(rt, on, func() error { return nil })
	require.NoError(t, err, "the stream is usable")
	require.NoError(t, rt.GraphDestroy(0, graphs[0]))
}
