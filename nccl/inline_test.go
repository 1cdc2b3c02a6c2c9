package nccl_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/nccl/internal/fakenccl"
)

// inlineRig is newRig with blocking communicators (WithInlineLaunch) and
// opts.
func inlineRig(t *testing.T, n int, size uint64, opts ...nccl.CommOption) *rig {
	t.Helper()
	return newRig(t, n, size, append(opts, nccl.WithInlineLaunch())...)
}

func (r *rig) putInt64(t *testing.T, d int, p cudart.DevicePtr, v uint64) {
	t.Helper()
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	require.NoError(t, r.fake.Memcpy(d, cudart.DeviceMem(p, 8), cudart.HostMem(b), cudart.HostToDevice))
}

func (r *rig) int64At(t *testing.T, d int, p cudart.DevicePtr) uint64 {
	t.Helper()
	require.NoError(t, r.fake.StreamSynchronize(d, r.s[d]))
	b := make([]byte, 8)
	require.NoError(t, r.fake.Memcpy(d, cudart.HostMem(b), cudart.DeviceMem(p, 8), cudart.DeviceToHost))
	return binary.LittleEndian.Uint64(b)
}

func TestInlineLaunchAllReduces(t *testing.T) {
	r := inlineRig(t, 4, 8)
	var ops []nccl.Op
	for d := range 4 {
		require.True(t, r.comms[d].InlineLaunch())
		assert.Equal(t, d, r.comms[d].Rank())
		assert.Equal(t, 4, r.comms[d].Size())
		r.putInt64(t, d, r.a[d], uint64(d+1))
		ops = append(ops, r.comms[d].AllReduceOp(r.a[d], r.b[d], 1, nccl.Int64, nccl.Sum, r.s[d]))
	}
	require.NoError(t, r.lib.Group(ops...), "one goroutine, every device")
	for d := range 4 {
		assert.Equal(t, uint64(10), r.int64At(t, d, r.b[d]), "rank %d", d)
	}
	errs := make([]error, 4)
	ranks(4, func(d int) {
		errs[d] = r.comms[d].AllReduce(r.b[d], r.a[d], 1, nccl.Int64, nccl.Sum, r.s[d])
	})
	for d := range 4 {
		require.NoError(t, errs[d], "a goroutine a rank")
		assert.Equal(t, uint64(40), r.int64At(t, d, r.a[d]), "rank %d", d)
	}
}

func TestInlineLaunchInitRankOnGoroutines(t *testing.T) {
	_, lib := openFake(t, 2)
	id, err := lib.UniqueID()
	require.NoError(t, err)
	comms := make([]*nccl.Comm, 2)
	errs := make([]error, 2)
	ranks(2, func(r int) { comms[r], errs[r] = lib.InitRank(r, id, 2, r, nccl.WithInlineLaunch()) })
	for r := range 2 {
		require.NoError(t, errs[r])
		assert.True(t, comms[r].InlineLaunch())
		assert.Equal(t, r, comms[r].Rank())
	}
	for r := range 2 {
		require.NoError(t, comms[r].Destroy())
	}
}

// TestInlineLaunchCharge: a blocking communicator is a split of a
// non-blocking one, destroyed after: it holds a split's charge, and takes
// a further communicator's at its first collective.
func TestInlineLaunchCharge(t *testing.T) {
	f, lib := openFake(t, 2)
	used := func() uint64 {
		free, total, err := f.MemGetInfo(1)
		require.NoError(t, err)
		return total - free
	}
	base := used()
	comms, err := lib.InitAll([]int{0, 1}, nccl.WithInlineLaunch())
	require.NoError(t, err)
	assert.Equal(t, uint64(fakenccl.KeptCharge+fakenccl.SplitCharge), used()-base, "what NCCL keeps from the first init, and the split")
	s, p := streamsAndBuffers(t, f, 2, 4)
	base = used()
	require.NoError(t, lib.Group(comms[0].AllReduceOp(p[0], p[0], 1, nccl.Int32, nccl.Sum, s[0]), comms[1].AllReduceOp(p[1], p[1], 1, nccl.Int32, nccl.Sum, s[1])))
	assert.Equal(t, uint64(fakenccl.FurtherFirstCharge), used()-base, "its first collective")
	for d := range 2 {
		require.NoError(t, comms[d].Destroy())
		require.NoError(t, f.Free(d, p[d]))
		require.NoError(t, f.StreamDestroy(d, s[d]))
	}
}

func TestGroupRefusesBlockingAndNonBlockingTogether(t *testing.T) {
	r := newRig(t, 2, 8)
	kids := make([]*nccl.Comm, 2)
	errs := make([]error, 2)
	ranks(2, func(d int) { kids[d], errs[d] = r.comms[d].Split(0, d, nccl.WithInlineLaunch()) })
	for d := range 2 {
		require.NoError(t, errs[d])
		require.True(t, kids[d].InlineLaunch(), "a blocking split of a non-blocking communicator")
		t.Cleanup(func() { assert.NoError(t, kids[d].Destroy()) })
	}
	err := r.lib.Group(kids[0].AllReduceOp(r.a[0], r.b[0], 1, nccl.Int64, nccl.Sum, r.s[0]), r.comms[1].AllReduceOp(r.a[1], r.b[1], 1, nccl.Int64, nccl.Sum, r.s[1]))
	require.ErrorIs(t, err, nccl.ErrInvalidOption)
	assert.Contains(t, err.Error(), "blocking (WithInlineLaunch) and non-blocking communicators in one group")
	require.NoError(t, r.comms[0].AsyncError(), "nothing reached NCCL")
	require.NoError(t, r.lib.Group(kids[0].AllReduceOp(r.a[0], r.b[0], 1, nccl.Int64, nccl.Sum, r.s[0]), kids[1].AllReduceOp(r.a[1], r.b[1], 1, nccl.Int64, nccl.Sum, r.s[1])), "the blocking ones together")
}

// TestInlineLaunchBadArgument: NCCL refuses the call and, the communicator
// being blocking, leaves its state alone (ncclEnqueueCheck sets the
// asynchronous error of non-blocking ones only): it goes on.
func TestInlineLaunchBadArgument(t *testing.T) {
	r := inlineRig(t, 2, 8)
	err := r.comms[0].Broadcast(r.a[0], r.b[0], 1, nccl.Int64, 2, r.s[0])
	require.ErrorIs(t, err, nccl.ErrInvalidArgument)
	require.NoError(t, r.comms[0].AsyncError())
	errs := make([]error, 2)
	ranks(2, func(d int) {
		r.putInt64(t, d, r.a[d], 3)
		errs[d] = r.comms[d].AllReduce(r.a[d], r.b[d], 1, nccl.Int64, nccl.Sum, r.s[d])
	})
	for d := range 2 {
		require.NoError(t, errs[d])
		assert.Equal(t, uint64(6), r.int64At(t, d, r.b[d]))
	}
}

// TestInlineLaunchPeerNeverJoins: a blocking call whose peer never posts
// returns within its bound, the communicator closed; the call, left to
// the fake, ends when the peer's communicator is aborted, and the
// binding aborts the closed one then (NewFakeT fails the test on a leak).
func TestInlineLaunchPeerNeverJoins(t *testing.T) {
	const bound = 50 * time.Millisecond
	r := inlineRig(t, 2, 8, nccl.WithTimeout(bound))
	start := time.Now()
	err := r.comms[0].AllReduce(r.a[0], r.b[0], 1, nccl.Int64, nccl.Sum, r.s[0])
	took := time.Since(start)
	require.ErrorIs(t, err, nccl.ErrTimeout)
	assert.Contains(t, err.Error(), "left running, "+r.comms[0].String()+" closed")
	assert.GreaterOrEqual(t, took, bound)
	assert.Less(t, took, bound+time.Second)
	require.ErrorIs(t, r.comms[0].AllReduce(r.a[0], r.b[0], 1, nccl.Int64, nccl.Sum, r.s[0]), nccl.ErrClosed)
	require.NoError(t, r.comms[1].Abort())
	require.NoError(t, r.comms[0].Abort(), "waits for the call left running, which the peer's abort ended, and its abort")
}

func TestInlineLaunchSplitOfABlockingCommunicator(t *testing.T) {
	r := inlineRig(t, 2, 8)
	kids := make([]*nccl.Comm, 2)
	errs := make([]error, 2)
	ranks(2, func(d int) { kids[d], errs[d] = r.comms[d].Split(0, -d) })
	for d := range 2 {
		require.NoError(t, errs[d], "a blocking split, of a blocking communicator")
		require.False(t, kids[d].InlineLaunch(), "without the option: non-blocking")
		assert.Equal(t, 1-d, kids[d].Rank(), "ordered by key")
		t.Cleanup(func() { assert.NoError(t, kids[d].Destroy()) })
	}
	_, err := r.comms[0].Split(0, 0, nccl.WithTimeout(20*time.Millisecond))
	require.ErrorIs(t, err, nccl.ErrTimeout, "rank 1 never splits")
	require.NoError(t, r.comms[1].Abort())
	require.NoError(t, r.comms[0].Abort(), "the split left running ended with rank 1's abort")
}
