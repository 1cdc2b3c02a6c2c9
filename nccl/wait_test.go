package nccl_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
)

// queued is every rank's communicator and stream, for Wait.
func (r *rig) queued() []nccl.Queued {
	qs := make([]nccl.Queued, len(r.comms))
	for d, c := range r.comms {
		qs[d] = nccl.Queued{Comm: c, Stream: r.s[d]}
	}
	return qs
}

// capture captures an all-reduce of 4 float32s from a to b on every rank's
// stream, a rank a goroutine, and instantiates each rank's graph.
func capture(t *testing.T, f *cudarttest.Fake, comms []*nccl.Comm, s []cudart.Stream, a, b []cudart.DevicePtr) []cudart.GraphExec {
	t.Helper()
	execs := make([]cudart.GraphExec, len(comms))
	errs := make([]error, len(comms))
	ranks(len(comms), func(d int) {
		if errs[d] = f.StreamBeginCapture(d, s[d], cudart.CaptureModeRelaxed); errs[d] != nil {
			return
		}
		err := comms[d].AllReduce(a[d], b[d], 4, nccl.Float32, nccl.Sum, s[d])
		g, endErr := f.StreamEndCapture(d, s[d])
		if errs[d] = errors.Join(err, endErr); errs[d] != nil {
			return
		}
		execs[d], err = f.GraphInstantiate(d, g)
		errs[d] = errors.Join(err, f.GraphDestroy(d, g))
	})
	for d := range comms {
		require.NoError(t, errs[d], "rank %d's captured all-reduce", d)
	}
	return execs
}

// putAndCheck writes each rank's 4 float32s (1, 2, 3, rank) to a before
// run, and checks the sum of every rank's in b after it.
func (r *rig) putAndCheck(t *testing.T, run func()) {
	t.Helper()
	for d := range r.comms {
		require.NoError(t, r.fake.Memcpy(d, cudart.DeviceMem(r.a[d], 16), cudart.HostMem(f32s(1, 2, 3, float32(d))), cudart.HostToDevice))
	}
	run()
	for d := range r.comms {
		done, err := r.fake.StreamQuery(d, r.s[d])
		require.NoError(t, err)
		assert.True(t, done, "rank %d's stream has nothing left queued", d)
		got := make([]byte, 16)
		require.NoError(t, r.fake.Memcpy(d, cudart.HostMem(got), cudart.DeviceMem(r.b[d], 16), cudart.DeviceToHost))
		assert.Equal(t, f32s(2, 4, 6, 1), got, "rank %d", d)
	}
}

// Wait returns nil once an all-reduce queued on every rank is done: the
// fake's stream queries run it, as a GPU runs it with no synchronisation.
// Nothing is left to fault, so the rig's communicators, streams and
// buffers go at cleanup.
func TestWaitReturnsOnceAnAllReduceIsDone(t *testing.T) {
	r := newRig(t, 2, 16)
	require.NoError(t, r.lib.Wait(r.fake, time.Second, r.queued()...), "nothing queued")
	r.putAndCheck(t, func() {
		ranks(2, func(d int) {
			assert.NoError(t, r.comms[d].AllReduce(r.a[d], r.b[d], 4, nccl.Float32, nccl.Sum, r.s[d]))
		})
		require.NoError(t, r.lib.Wait(r.fake, 5*time.Second, r.queued()...))
	})
}

// A captured all-reduce runs once every rank's graph is launched: rank 0
// launches its graph twice, rank 1 once, then again later; Wait, polling
// while rank 1's second launch is still to come, finds rank 0's second
// all-reduce not done (a GPU's kernel waits for its peers), and returns nil
// once rank 1 launched.
func TestWaitRunsACapturedAllReduceOnceEveryRankLaunched(t *testing.T) {
	r := newRig(t, 2, 16)
	execs := capture(t, r.fake, r.comms, r.s, r.a, r.b)
	for d, e := range execs {
		t.Cleanup(func() { assert.NoError(t, r.fake.GraphExecDestroy(d, e)) })
	}
	const late = 50 * time.Millisecond
	r.putAndCheck(t, func() {
		require.NoError(t, r.fake.GraphLaunch(0, execs[0], r.s[0]))
		require.NoError(t, r.fake.GraphLaunch(0, execs[0], r.s[0]))
		require.NoError(t, r.fake.GraphLaunch(1, execs[1], r.s[1]))
		launched := make(chan error)
		go func() {
			time.Sleep(late)
			launched <- r.fake.GraphLaunch(1, execs[1], r.s[1])
		}()
		start := time.Now()
		err := r.lib.Wait(r.fake, 5*time.Second, r.queued()...)
		require.NoError(t, <-launched)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), late, "Wait returned before rank 1's second launch")
	})
}

// Wait polls and never synchronises: a rank whose peer never launches its
// part (on the fake, a graph that captured it never launched; on a GPU,
// also a peer killed after posting) times out within its bound, aborting
// its communicator, where a synchronisation would have hung on a GPU.
func TestWaitIsBoundedWhenAPeerNeverRuns(t *testing.T) {
	f, lib := openFake(t, 2)
	comms, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	s, p := streamsAndBuffers(t, f, 2, 16)
	execs := capture(t, f, comms, s, p, p)
	require.NoError(t, f.GraphLaunch(0, execs[0], s[0]))
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
	// Device 0 faulted (as a GPU's would, its kernel stopped): a reset
	// frees what it held. Device 1 ran nothing.
	require.NoError(t, f.DeviceReset(0))
	require.NoError(t, comms[0].Destroy())
	require.NoError(t, comms[1].Destroy())
	require.NoError(t, f.GraphExecDestroy(1, execs[1]))
	require.NoError(t, f.StreamDestroy(1, s[1]))
	require.NoError(t, f.Free(1, p[1]))
}

func TestWaitRefusesAStreamWithoutACommunicator(t *testing.T) {
	r := newRig(t, 1, 16)
	require.ErrorIs(t, r.lib.Wait(r.fake, time.Second, nccl.Queued{Stream: r.s[0]}), nccl.ErrInvalidOption)
	require.ErrorIs(t, r.lib.Wait(r.fake, 0, nccl.Queued{Comm: r.comms[0], Stream: r.s[0]}), nccl.ErrInvalidOption)
}
