package nccl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
)

// Wait polls and never synchronises: a stream with nothing queued is done
// at once, and a rank whose peer's part never runs (on the fake, a peer
// that never synchronises its stream; on a GPU, a peer killed after
// posting) times out within its bound, aborting its communicator, where a
// synchronisation would have run (on a GPU, waited for) the peer.
func TestWaitIsBoundedWhenAPeerNeverRuns(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	lib, err := nccl.Open(f)
	require.NoError(t, err)
	comms, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	s := make([]cudart.Stream, 2)
	p := make([]cudart.DevicePtr, 2)
	for d := range 2 {
		s[d], err = f.StreamCreate(d)
		require.NoError(t, err)
		p[d], err = f.Malloc(d, 16)
		require.NoError(t, err)
	}
	require.NoError(t, lib.Wait(f, time.Second, nccl.Queued{Comm: comms[0], Stream: s[0]}), "nothing queued")
	ranks(2, func(i int) {
		assert.NoError(t, comms[i].AllReduce(p[i], p[i], 4, nccl.Float32, nccl.Sum, s[i]))
	})
	const bound = 200 * time.Millisecond
	start := time.Now()
	err = lib.Wait(f, bound, nccl.Queued{Comm: comms[0], Stream: s[0]})
	took := time.Since(start)
	require.ErrorIs(t, err, nccl.ErrTimeout)
	assert.Contains(t, err.Error(), "rank 0 of 2 on device 0 not done after 200ms")
	assert.GreaterOrEqual(t, took, bound)
	assert.Less(t, took, bound+nccl.AbortWait, "Wait's documented bound")
	require.ErrorIs(t, comms[0].AllReduce(p[0], p[0], 4, nccl.Float32, nccl.Sum, s[0]), nccl.ErrClosed, "aborted")
	assert.ErrorContains(t, f.StreamSynchronize(0, s[0]), "rank 0's communicator was aborted before its part ran")
	// Both devices faulted (as a GPU's would, their kernels stopped): a
	// reset frees what they held.
	require.NoError(t, f.DeviceReset(0))
	require.NoError(t, f.DeviceReset(1))
	require.NoError(t, comms[0].Destroy())
	require.Error(t, comms[1].Destroy(), "gone with the reset")
}

func TestWaitRefusesAStreamWithoutACommunicator(t *testing.T) {
	r := newRig(t, 1, 16)
	require.ErrorIs(t, r.lib.Wait(r.fake, time.Second, nccl.Queued{Stream: r.s[0]}), nccl.ErrInvalidOption)
	require.ErrorIs(t, r.lib.Wait(r.fake, 0, nccl.Queued{Comm: r.comms[0], Stream: r.s[0]}), nccl.ErrInvalidOption)
}
