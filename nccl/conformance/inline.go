package conformance

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
)

// inlineWorld is newWorld with blocking communicators (WithInlineLaunch).
func inlineWorld(t *testing.T, rt cudart.Runtime, lib *nccl.Library, devs []int, size uint64) *world {
	t.Helper()
	w := newWorld(t, rt, lib, devs, size, nccl.WithInlineLaunch())
	for r, c := range w.comms {
		require.True(t, c.InlineLaunch(), "rank %d's communicator is blocking", r)
		require.Equal(t, r, c.Rank(), "rank %d's Rank", r)
		require.Equal(t, w.n(), c.Size(), "rank %d's Size", r)
	}
	return w
}

// testInline runs blocking communicators (WithInlineLaunch): every
// collective's result in one group over every device, ranks on goroutines
// made by InitRank, Capture's graphs (the same nodes: NCCL launches a
// blocking communicator's kernel as a non-blocking one's, in the call
// rather than on its thread), a split of a blocking communicator, the
// refusal of a group of both kinds, a refused argument (which leaves a
// blocking communicator usable), and the bounds: an init with a rank
// missing, and a collective a peer never posts.
func (s *suite) testInline(t *testing.T) {
	t.Run("Collectives", s.testInlineCollectives)
	t.Run("RanksOnGoroutines", s.testInlineRanksOnGoroutines)
	t.Run("Capture", func(t *testing.T) { s.capture(t, nccl.WithInlineLaunch()) })
	t.Run("Split", s.testInlineSplit)
	t.Run("MixedGroup", s.testInlineMixedGroup)
	t.Run("BadArgument", s.testInlineBadArgument)
	t.Run("Timeout", s.testInlineTimeout)
	t.Run("PeerNeverPosts", s.testInlinePeerNeverPosts)
}

func (s *suite) testInlineCollectives(t *testing.T) {
	n := uint64(len(s.devs))
	w := inlineWorld(t, s.rt, s.lib, s.devs, count*n*4)
	for ci, c := range collectives(len(s.devs)) {
		t.Run(c.name, func(t *testing.T) {
			in := make([][]float64, n)
			var group []nccl.Op
			for r := range w.n() {
				b, v := values(uint64(7000+100*ci+r), c.sendN(n), nccl.Float32)
				in[r] = v
				w.put(t, r, w.send[r], b)
				w.put(t, r, w.recv[r], make([]byte, c.recvN(n)*4))
				group = append(group, c.op(w, r, nccl.Float32, nccl.Sum))
			}
			require.NoError(t, s.lib.Group(group...), c.name)
			w.sync(t)
			for r := range w.n() {
				got := w.get(t, r, w.recv[r], c.recvN(n)*4)
				for i := range c.recvN(n) {
					want, bound, ok := c.want(in, r, i, nccl.Sum, nccl.Float32)
					if !ok {
						break
					}
					if g := decode(got, i, nccl.Float32); math.Abs(g-want) > bound {
						t.Fatalf("rank %d element %d: got %v, want %v within %v", r, i, g, want, bound)
					}
				}
			}
		})
	}
}

func (s *suite) testInlineRanksOnGoroutines(t *testing.T) {
	s.ranksOnGoroutines(t, nccl.WithInlineLaunch())
}

// testInlineSplit splits a blocking communicator (the split blocks, in
// the parent's mode) into non-blocking ones.
func (s *suite) testInlineSplit(t *testing.T) {
	s.split(t, inlineWorld(t, s.rt, s.lib, s.devs, 8))
}

// testInlineMixedGroup: a group of a blocking and a non-blocking
// communicator is refused before anything reaches NCCL, which would give
// the group the last communicator's mode (NCCL 2.28's group.h), and both
// kinds work after.
func (s *suite) testInlineMixedGroup(t *testing.T) {
	w := inlineWorld(t, s.rt, s.lib, s.devs, 8)
	plain := newWorld(t, s.rt, s.lib, s.devs, 8)
	n := w.n()
	mixed := []nccl.Op{w.comms[0].AllReduceOp(w.send[0], w.recv[0], 1, nccl.Int64, nccl.Sum, w.s[0])}
	for r := 1; r < n; r++ {
		mixed = append(mixed, plain.comms[r].AllReduceOp(plain.send[r], plain.recv[r], 1, nccl.Int64, nccl.Sum, plain.s[r]))
	}
	err := s.lib.Group(mixed...)
	require.ErrorIs(t, err, nccl.ErrInvalidOption, "a group of both kinds")
	for _, x := range []*world{w, plain} {
		var group []nccl.Op
		for r := range n {
			group = append(group, x.comms[r].AllReduceOp(x.send[r], x.recv[r], 1, nccl.Int64, nccl.Sum, x.s[r]))
		}
		require.NoError(t, s.lib.Group(group...), "a group of one kind, after")
		x.sync(t)
	}
}

// testInlineBadArgument: NCCL refuses the argument and, the communicator
// being blocking, sets no asynchronous error (ncclEnqueueCheck in
// enqueue.cc sets it for non-blocking ones only, and the refused call
// left nothing queued): an all-reduce on every rank works after.
func (s *suite) testInlineBadArgument(t *testing.T) {
	w := inlineWorld(t, s.rt, s.lib, s.devs, 8)
	n := w.n()
	err := w.comms[0].Broadcast(w.send[0], w.recv[0], 1, nccl.Float32, n, w.s[0])
	require.ErrorIs(t, err, nccl.ErrInvalidArgument, "a root past the ranks")
	require.NoError(t, w.comms[0].AsyncError(), "AsyncError after")
	errs := make([]error, n)
	onRanks(n, func(r int) {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, 5)
		w.put(t, r, w.send[r], b)
		errs[r] = w.comms[r].AllReduce(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r])
	})
	w.sync(t)
	for r := range n {
		require.NoError(t, errs[r], "AllReduce on rank %d after", r)
		require.Equal(t, uint64(5*n), binary.LittleEndian.Uint64(w.get(t, r, w.recv[r], 8)), "rank %d", r)
	}
}

// testInlineTimeout: a blocking communicator's init is a non-blocking one
// first, bounded as any.
func (s *suite) testInlineTimeout(t *testing.T) {
	id, err := s.lib.UniqueID()
	require.NoError(t, err, "UniqueID")
	const bound = time.Second
	start := time.Now()
	_, err = s.lib.InitRank(s.devs[0], id, 2, 0, nccl.WithTimeout(bound), nccl.WithInlineLaunch())
	took := time.Since(start)
	require.ErrorIs(t, err, nccl.ErrTimeout, "InitRank with no rank 1")
	require.Less(t, took, bound+5*time.Second, "the abort after the bound")
}

// testInlinePeerNeverPosts: after an all-reduce on every rank (NCCL has
// then connected the ranks for it), rank 0 posts one alone. On a GPU
// the blocking call returns once the kernel is queued, and the kernel
// waits for the peers: Library.Wait ends it within its bound, aborting
// the communicator. The fake waits for the peers in the call, which the
// binding gives up on within the communicator's bound, closing it. Either
// way an error wrapping ErrTimeout comes within the two bounds and
// AbortWait; the other ranks then abort, and rank 0's Abort returns nil
// (on the fake once the call left running has ended, with the peers'
// aborts, and aborted rank 0's communicator). The communicators' bound,
// which their inits take too, is short for the fake's sake.
func (s *suite) testInlinePeerNeverPosts(t *testing.T) {
	const bound, wait = 3 * time.Second, time.Second
	st, ok := s.rt.(cudart.Streams)
	require.True(t, ok, "the runtime makes streams (cudart.Streams)")
	comms, err := s.lib.InitAll(s.devs, nccl.WithInlineLaunch(), nccl.WithTimeout(bound))
	require.NoError(t, err, "InitAll with WithInlineLaunch")
	w := newBuffers(t, s.rt, s.lib, s.devs, 8)
	w.comms = comms
	n := w.n()
	var group []nccl.Op
	for r := range n {
		group = append(group, comms[r].AllReduceOp(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r]))
	}
	require.NoError(t, s.lib.Group(group...), "the all-reduce on every rank")
	w.sync(t)

	start := time.Now()
	err = comms[0].AllReduce(w.send[0], w.recv[0], 1, nccl.Int64, nccl.Sum, w.s[0])
	if err == nil {
		err = s.lib.Wait(st, wait, nccl.Queued{Comm: comms[0], Stream: w.s[0]})
	}
	took := time.Since(start)
	require.True(t, errors.Is(err, nccl.ErrTimeout), "rank 0 alone: %v", err)
	require.Less(t, took, bound+wait+nccl.AbortWait+time.Second, "the bounds")
	require.ErrorIs(t, comms[0].AllReduce(w.send[0], w.recv[0], 1, nccl.Int64, nccl.Sum, w.s[0]), nccl.ErrClosed, "rank 0's communicator after")
	for r := 1; r < n; r++ {
		require.NoError(t, comms[r].Abort(), "rank %d's Abort", r)
	}
	require.NoError(t, comms[0].Abort(), "rank 0's Abort")
}
