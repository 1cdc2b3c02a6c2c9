package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
)

// TestNCCL checks NCCL on rt over devices (two or more, each once), in
// subtests: Charge (the device memory communicators take, stage by stage,
// logged "nccl charge:", within a range of what the fake charges; first, so
// that NCCL has done nothing before in the process), Collectives (every collective, data type and reduction against
// the CPU, within the bound reduce documents for floats), SendRecv (a ring
// of transfers in one group), RanksOnGoroutines (InitRank on a goroutine
// per rank, which passes the 128-byte unique id by value), Split,
// SplitNoColor (a rank of NoColor gets no communicator, the others one
// without it), BadArguments (what NCCL refuses, and that the communicator is failed
// after), Timeout (a rank alone times out within its bound), Register
// (an all-reduce on registered buffers), RegisterPool (a pool's buffer and
// a slot's, registered), Capture (an all-reduce
// captured on each rank's stream, replayed: its results, and no memory
// taken by the replays), Wait (Library.Wait returns once an eager and a
// captured all-reduce are done, their results there), Inline (blocking
// communicators, WithInlineLaunch: results, ranks on goroutines, graphs, a
// split, the refusal of a group of both kinds, a refused argument, and the
// bounds) and Windows (vmem arenas as windows, and what NCCL refuses of
// them; last, as it aborts communicators in the middle of a registration;
// see testWindows).
//
// Charge's expectations on a GPU were measured in a process where nothing
// had used NCCL before: run TestNCCL before any other NCCL test of the
// binary, or in a binary of its own. After other NCCL work they are the
// fake's model, which no GPU run has checked.
func TestNCCL(t *testing.T, rt cudart.Runtime, devices []int) {
	require.GreaterOrEqual(t, len(devices), 2, "TestNCCL needs two devices or more")
	lib, err := nccl.Open(rt)
	require.NoError(t, err, "nccl.Open")
	v, err := lib.Version()
	require.NoError(t, err, "Version")
	t.Logf("NCCL %s (%s) over devices %v", v, lib.Path(), devices)
	s := &suite{rt: rt, lib: lib, devs: devices}
	t.Run("Charge", s.testCharge)
	t.Run("Collectives", s.testCollectives)
	t.Run("SendRecv", s.testSendRecv)
	t.Run("RanksOnGoroutines", s.testRanksOnGoroutines)
	t.Run("Split", s.testSplit)
	t.Run("SplitNoColor", s.testSplitNoColor)
	t.Run("BadArguments", s.testBadArguments)
	t.Run("Timeout", s.testTimeout)
	t.Run("Register", s.testRegister)
	t.Run("RegisterPool", s.testRegisterPool)
	t.Run("Capture", s.testCapture)
	t.Run("Wait", s.testWait)
	t.Run("Inline", s.testInline)
	t.Run("Windows", s.testWindows)
}

type suite struct {
	rt   cudart.Runtime
	lib  *nccl.Library
	devs []int
}

// count is the elements a rank contributes: not a multiple of anything a
// GPU's algorithm splits by.
const count = 1001

var (
	types = []nccl.DataType{nccl.Float32, nccl.Float16, nccl.BFloat16, nccl.Int32, nccl.Int64}
	ops   = []nccl.RedOp{nccl.Sum, nccl.Prod, nccl.Min, nccl.Max, nccl.Avg}
)

// collective is one of the five collectives, run on every rank of w in one
// group, and what each rank's recv must then hold, element by element.
type collective struct {
	name   string
	reduce bool
	// sendN and recvN are the elements of a rank's send and recv buffer.
	sendN, recvN func(n uint64) uint64
	op           func(w *world, r int, t nccl.DataType, op nccl.RedOp) nccl.Op
	// want is element i of rank r's recv from every rank's send values,
	// with its bound; ok false where recv is not written (Reduce's
	// non-root ranks).
	want func(in [][]float64, r int, i uint64, op nccl.RedOp, t nccl.DataType) (v, bound float64, ok bool)
}

func collectives(n int) []collective {
	one := func(uint64) uint64 { return count }
	all := func(n uint64) uint64 { return count * n }
	root := n - 1
	column := func(in [][]float64, i uint64) []float64 {
		xs := make([]float64, len(in))
		for r := range in {
			xs[r] = in[r][i]
		}
		return xs
	}
	return []collective{
		{"AllReduce", true, one, one,
			func(w *world, r int, t nccl.DataType, op nccl.RedOp) nccl.Op {
				return w.comms[r].AllReduceOp(w.send[r], w.recv[r], count, t, op, w.s[r])
			},
			func(in [][]float64, r int, i uint64, op nccl.RedOp, t nccl.DataType) (float64, float64, bool) {
				v, b := reduce(column(in, i), op, t)
				return v, b, true
			}},
		{"Reduce", true, one, one,
			func(w *world, r int, t nccl.DataType, op nccl.RedOp) nccl.Op {
				return w.comms[r].ReduceOp(w.send[r], w.recv[r], count, t, op, root, w.s[r])
			},
			func(in [][]float64, r int, i uint64, op nccl.RedOp, t nccl.DataType) (float64, float64, bool) {
				v, b := reduce(column(in, i), op, t)
				return v, b, r == root
			}},
		{"ReduceScatter", true, all, one,
			func(w *world, r int, t nccl.DataType, op nccl.RedOp) nccl.Op {
				return w.comms[r].ReduceScatterOp(w.send[r], w.recv[r], count, t, op, w.s[r])
			},
			func(in [][]float64, r int, i uint64, op nccl.RedOp, t nccl.DataType) (float64, float64, bool) {
				v, b := reduce(column(in, uint64(r)*count+i), op, t)
				return v, b, true
			}},
		{"Broadcast", false, one, one,
			func(w *world, r int, t nccl.DataType, _ nccl.RedOp) nccl.Op {
				return w.comms[r].BroadcastOp(w.send[r], w.recv[r], count, t, root, w.s[r])
			},
			func(in [][]float64, _ int, i uint64, _ nccl.RedOp, _ nccl.DataType) (float64, float64, bool) {
				return in[root][i], 0, true
			}},
		{"AllGather", false, one, all,
			func(w *world, r int, t nccl.DataType, _ nccl.RedOp) nccl.Op {
				return w.comms[r].AllGatherOp(w.send[r], w.recv[r], count, t, w.s[r])
			},
			func(in [][]float64, _ int, i uint64, _ nccl.RedOp, _ nccl.DataType) (float64, float64, bool) {
				return in[i/count][i%count], 0, true
			}},
	}
}

func (s *suite) testCollectives(t *testing.T) {
	n := uint64(len(s.devs))
	w := newWorld(t, s.rt, s.lib, s.devs, count*n*8)
	for ci, c := range collectives(len(s.devs)) {
		cops := ops
		if !c.reduce {
			cops = []nccl.RedOp{nccl.Sum}
		}
		for ti, typ := range types {
			for oi, op := range cops {
				name := fmt.Sprintf("%s/%s", c.name, typ)
				if c.reduce {
					name += "/" + op.String()
				}
				t.Run(name, func(t *testing.T) {
					in := make([][]float64, n)
					var group []nccl.Op
					for r := range w.n() {
						b, v := values(uint64(1000*ci+100*ti+10*oi+r), c.sendN(n), typ)
						in[r] = v
						w.put(t, r, w.send[r], b)
						w.put(t, r, w.recv[r], make([]byte, c.recvN(n)*typ.Size()))
						group = append(group, c.op(w, r, typ, op))
					}
					require.NoError(t, s.lib.Group(group...), name)
					w.sync(t)
					for r := range w.n() {
						got := w.get(t, r, w.recv[r], c.recvN(n)*typ.Size())
						for i := range c.recvN(n) {
							want, bound, ok := c.want(in, r, i, op, typ)
							if !ok {
								break
							}
							if g := decode(got, i, typ); math.Abs(g-want) > bound {
								t.Fatalf("rank %d element %d: got %v, want %v within %v", r, i, g, want, bound)
							}
						}
					}
				})
			}
		}
	}
}

func (s *suite) testSendRecv(t *testing.T) {
	w := newWorld(t, s.rt, s.lib, s.devs, count*4)
	n := w.n()
	var group []nccl.Op
	for r := range n {
		b := make([]byte, count*4)
		for i := range count {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(r*100000+i))
		}
		w.put(t, r, w.send[r], b)
		group = append(group,
			w.comms[r].SendOp(w.send[r], count, nccl.Int32, (r+1)%n, w.s[r]),
			w.comms[r].RecvOp(w.recv[r], count, nccl.Int32, (r+n-1)%n, w.s[r]))
	}
	require.NoError(t, s.lib.Group(group...), "a ring of sends and receives")
	w.sync(t)
	for r := range n {
		got := w.get(t, r, w.recv[r], count*4)
		from := (r + n - 1) % n
		for i := range count {
			require.Equal(t, uint32(from*100000+i), binary.LittleEndian.Uint32(got[4*i:]), "rank %d element %d, from rank %d", r, i, from)
		}
	}
}

// onRanks runs fn for every rank in a goroutine of its own, and waits.
func onRanks(n int, fn func(r int)) {
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { fn(r) })
	}
	wg.Wait()
}

func (s *suite) testRanksOnGoroutines(t *testing.T) { s.ranksOnGoroutines(t) }

// ranksOnGoroutines makes a communicator a rank with InitRank and opts,
// each rank on a goroutine, and runs an all-reduce the same way.
func (s *suite) ranksOnGoroutines(t *testing.T, opts ...nccl.CommOption) {
	n := len(s.devs)
	id, err := s.lib.UniqueID()
	require.NoError(t, err, "UniqueID")
	comms := make([]*nccl.Comm, n)
	errs := make([]error, n)
	onRanks(n, func(r int) { comms[r], errs[r] = s.lib.InitRank(s.devs[r], id, n, r, opts...) })
	inline := len(opts) > 0
	for r := range n {
		require.NoError(t, errs[r], "InitRank of rank %d: the unique id reached NCCL whole", r)
		t.Cleanup(func() { require.NoError(t, comms[r].Destroy(), "Destroy") })
		require.Equal(t, r, comms[r].Rank(), "Rank")
		require.Equal(t, n, comms[r].Size(), "Size")
		require.Equal(t, inline, comms[r].InlineLaunch(), "InlineLaunch")
	}
	w := newWorld(t, s.rt, s.lib, s.devs, 8)
	onRanks(n, func(r int) {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(r+1))
		w.put(t, r, w.send[r], b)
		errs[r] = comms[r].AllReduce(w.send[r], w.send[r], 1, nccl.Int64, nccl.Sum, w.s[r])
	})
	w.sync(t)
	for r := range n {
		require.NoError(t, errs[r], "AllReduce on rank %d", r)
		got := binary.LittleEndian.Uint64(w.get(t, r, w.send[r], 8))
		require.Equal(t, uint64(n*(n+1)/2), got, "rank %d: the sum of 1..%d", r, n)
	}
}

func (s *suite) testSplit(t *testing.T) { s.split(t, newWorld(t, s.rt, s.lib, s.devs, 8)) }

// split splits w's communicators by parity, into non-blocking ones, and
// runs an all-reduce on each.
func (s *suite) split(t *testing.T, w *world) {
	n := w.n()
	kids := make([]*nccl.Comm, n)
	errs := make([]error, n)
	// Two colors, by parity; keys reverse the ranks' order in each.
	onRanks(n, func(r int) { kids[r], errs[r] = w.comms[r].Split(r%2, -r) })
	for r := range n {
		require.NoError(t, errs[r], "Split on rank %d", r)
		require.NotNil(t, kids[r], "rank %d's new communicator", r)
		t.Cleanup(func() { require.NoError(t, kids[r].Destroy(), "Destroy") })
		require.False(t, kids[r].InlineLaunch(), "rank %d's new communicator is non-blocking", r)
		size := (n - r%2 + 1) / 2
		require.Equal(t, size, kids[r].Size(), "rank %d's color has %d ranks", r, size)
		require.Equal(t, size-1-r/2, kids[r].Rank(), "rank %d, ordered by key -rank", r)
	}
	onRanks(n, func(r int) {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(r))
		w.put(t, r, w.send[r], b)
		errs[r] = kids[r].AllReduce(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r])
	})
	w.sync(t)
	for r := range n {
		require.NoError(t, errs[r], "AllReduce on rank %d's new communicator", r)
		want := uint64(0)
		for q := r % 2; q < n; q += 2 {
			want += uint64(q)
		}
		require.Equal(t, want, binary.LittleEndian.Uint64(w.get(t, r, w.recv[r], 8)), "rank %d: the sum of its color's parent ranks", r)
	}
}

func (s *suite) testSplitNoColor(t *testing.T) {
	w := newWorld(t, s.rt, s.lib, s.devs, 8)
	n := w.n()
	kids := make([]*nccl.Comm, n)
	errs := make([]error, n)
	onRanks(n, func(r int) {
		color := 7
		if r == 0 {
			color = nccl.NoColor
		}
		kids[r], errs[r] = w.comms[r].Split(color, 0)
	})
	require.NoError(t, errs[0], "Split of NoColor on rank 0")
	require.True(t, kids[0] == nil, "rank 0's communicator, of NoColor: got %v", kids[0])
	for r := 1; r < n; r++ {
		require.NoError(t, errs[r], "Split on rank %d", r)
		require.NotNil(t, kids[r], "rank %d's new communicator", r)
		t.Cleanup(func() { require.NoError(t, kids[r].Destroy(), "Destroy") })
		require.Equal(t, n-1, kids[r].Size(), "rank %d's communicator, without rank 0", r)
		require.Equal(t, r-1, kids[r].Rank(), "rank %d, ordered by its parent rank on equal keys", r)
	}
	onRanks(n-1, func(i int) {
		r := i + 1
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(r))
		w.put(t, r, w.send[r], b)
		errs[r] = kids[r].AllReduce(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r])
	})
	w.sync(t)
	for r := 1; r < n; r++ {
		require.NoError(t, errs[r], "AllReduce on rank %d's new communicator", r)
		require.Equal(t, uint64(n*(n-1)/2), binary.LittleEndian.Uint64(w.get(t, r, w.recv[r], 8)), "rank %d: the sum of ranks 1..%d", r, n-1)
	}
	// The parent still works after a split, on every rank.
	onRanks(n, func(r int) {
		errs[r] = w.comms[r].AllReduce(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r])
	})
	w.sync(t)
	for r := range n {
		require.NoError(t, errs[r], "AllReduce on rank %d's parent after the split", r)
	}
}

func (s *suite) testBadArguments(t *testing.T) {
	n := len(s.devs)
	for _, tc := range []struct {
		name string
		call func(w *world) error
	}{
		{"RootPastTheRanks", func(w *world) error {
			return w.comms[0].Broadcast(w.send[0], w.recv[0], 1, nccl.Float32, n, w.s[0])
		}},
		{"NegativeRoot", func(w *world) error {
			return w.comms[0].Reduce(w.send[0], w.recv[0], 1, nccl.Float32, nccl.Sum, -1, w.s[0])
		}},
		{"PeerPastTheRanks", func(w *world) error { return w.comms[0].Send(w.send[0], 1, nccl.Float32, n, w.s[0]) }},
		{"UnknownType", func(w *world) error {
			return w.comms[0].AllReduce(w.send[0], w.recv[0], 1, nccl.DataType(12), nccl.Sum, w.s[0])
		}},
		{"UnknownOp", func(w *world) error {
			return w.comms[0].AllReduce(w.send[0], w.recv[0], 1, nccl.Float32, nccl.RedOp(5), w.s[0])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, s.rt, s.lib, s.devs, 64)
			err := tc.call(w)
			require.ErrorIs(t, err, nccl.ErrInvalidArgument, "the call")
			var e *nccl.Error
			require.ErrorAs(t, err, &e, "the call")
			require.Equal(t, "ncclInvalidArgument", e.Name, "the result's name")
			// NCCL sets a non-blocking communicator's error on a refused
			// argument: it is of no more use; Destroy aborts it.
			require.ErrorIs(t, w.comms[0].AsyncError(), nccl.ErrInvalidArgument, "AsyncError after")
			require.NoError(t, w.comms[1].AsyncError(), "AsyncError of the other rank")
		})
	}
}

func (s *suite) testTimeout(t *testing.T) {
	id, err := s.lib.UniqueID()
	require.NoError(t, err, "UniqueID")
	const bound = 2 * time.Second
	start := time.Now()
	_, err = s.lib.InitRank(s.devs[0], id, 2, 0, nccl.WithTimeout(bound))
	took := time.Since(start)
	require.ErrorIs(t, err, nccl.ErrTimeout, "InitRank with no rank 1")
	require.Less(t, took, bound+5*time.Second, "the abort after the bound")
}

func (s *suite) testRegister(t *testing.T) {
	const size = 1 << 20
	w := newWorld(t, s.rt, s.lib, s.devs, size)
	n := w.n()
	regs := make([]*nccl.Registration, 2*n)
	for r := range n {
		var err error
		regs[2*r], err = w.comms[r].Register(w.send[r], size)
		require.NoError(t, err, "Register rank %d's send", r)
		regs[2*r+1], err = w.comms[r].Register(w.recv[r], size)
		require.NoError(t, err, "Register rank %d's recv", r)
	}
	var group []nccl.Op
	for r := range n {
		b, _ := values(uint64(r), size/4, nccl.Int32)
		w.put(t, r, w.send[r], b)
		group = append(group, w.comms[r].AllReduceOp(w.send[r], w.recv[r], size/4, nccl.Int32, nccl.Sum, w.s[r]))
	}
	require.NoError(t, s.lib.Group(group...), "AllReduce on registered buffers")
	w.sync(t)
	in := make([][]float64, n)
	for r := range n {
		_, in[r] = values(uint64(r), size/4, nccl.Int32)
	}
	for r := range n {
		got := w.get(t, r, w.recv[r], size)
		for i := range uint64(size / 4) {
			want := 0.0
			for q := range n {
				want += in[q][i]
			}
			require.Equal(t, want, decode(got, i, nccl.Int32), "rank %d element %d", r, i)
		}
	}
	for _, reg := range regs {
		require.NoError(t, reg.Deregister(), "Deregister")
		require.NoError(t, reg.Deregister(), "Deregister again")
	}
}
