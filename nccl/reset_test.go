package nccl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/nccl"
)

// A reset of a device destroys its communicators with its memory, as
// cudaDeviceReset ends the context NCCL worked in: their memory is back, a
// call on one fails at once, Destroy says it is gone and closes it, and
// the other device's rank, left alone, times out within its bound (and is
// aborted) instead of waiting for it.
func TestDeviceResetDropsCommunicators(t *testing.T) {
	f, lib := openFake(t, 2)
	comms, err := lib.InitAll([]int{0, 1}, nccl.WithTimeout(100*time.Millisecond))
	require.NoError(t, err)
	free, total, err := f.MemGetInfo(0)
	require.NoError(t, err)
	require.Less(t, free, total, "the communicator holds device memory")
	require.NoError(t, f.DeviceReset(0))
	free, total, err = f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, total, free, "the reset gave the communicator's memory back")
	assert.Equal(t, 1, f.Live().LibraryHandles, "device 1's communicator alone is left")

	err = comms[0].AllReduce(0, 0, 0, nccl.Float32, nccl.Sum, 0)
	require.ErrorIs(t, err, nccl.ErrInvalidArgument, "a call on the reset device's communicator")
	err = comms[1].AllReduce(0, 0, 0, nccl.Float32, nccl.Sum, 0)
	require.ErrorIs(t, err, nccl.ErrTimeout, "device 1's rank, its peer gone")
	require.ErrorIs(t, comms[0].Destroy(), nccl.ErrInvalidArgument, "Destroy: the communicator is gone")
	require.NoError(t, comms[0].Destroy(), "and closed")
	require.ErrorIs(t, comms[0].AllReduce(0, 0, 0, nccl.Float32, nccl.Sum, 0), nccl.ErrClosed)
	require.NoError(t, comms[1].Destroy(), "the timeout aborted it")
	assert.Zero(t, f.Live().LibraryHandles)
}
