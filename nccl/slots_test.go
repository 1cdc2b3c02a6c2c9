package nccl_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/pool"
)

// commSlots is a fake of devs devices, n slots on each (a MultiSlots), slot
// i's communicators one InitAll over the devices, and x, each slot's
// buffer of 8 bytes.
type commSlots struct {
	f     *cudarttest.Fake
	lib   *nccl.Library
	m     *pool.MultiSlots
	comms [][]*nccl.Comm
	x     pool.Ref
}

func newCommSlots(t *testing.T, devs, n int) *commSlots {
	t.Helper()
	f, lib := openFake(t, devs)
	ds := devices(devs)
	cs := &commSlots{f: f, lib: lib}
	for range n {
		comms, err := lib.InitAll(ds)
		require.NoError(t, err)
		cs.comms = append(cs.comms, comms)
	}
	// The communicators are the caller's: destroyed after the slots' Close.
	t.Cleanup(func() {
		for _, comms := range cs.comms {
			for _, c := range comms {
				assert.NoError(t, c.Destroy())
			}
		}
	})
	pr := pool.NewProfile("request")
	var err error
	cs.x, err = pr.Device(8, pool.Name("x"))
	require.NoError(t, err)
	cs.m, err = pool.NewMultiSlots(f, ds, n, pool.SlotLayout{Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{lib.ForSlots(cs.comms)}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cs.m.Close()) })
	return cs
}

// acquireAll holds every slot, by index then device.
func (cs *commSlots) acquireAll(t *testing.T, devs, n int) [][]pool.Slot {
	t.Helper()
	held := make([][]pool.Slot, n)
	for i := range held {
		held[i] = make([]pool.Slot, devs)
	}
	for range devs * n {
		sl, err := cs.m.Acquire(context.Background(), "request")
		require.NoError(t, err)
		held[sl.Index()][sl.Device()] = sl
	}
	return held
}

func (cs *commSlots) put(t *testing.T, sl pool.Slot, v uint64) cudart.DevicePtr {
	t.Helper()
	p, err := sl.Ptr(cs.x)
	require.NoError(t, err)
	b := binary.LittleEndian.AppendUint64(nil, v)
	require.NoError(t, cs.f.Memcpy(sl.Device(), cudart.DeviceMem(p, 8), cudart.HostMem(b), cudart.HostToDevice))
	return p
}

func (cs *commSlots) get(t *testing.T, sl pool.Slot) uint64 {
	t.Helper()
	p, err := sl.Ptr(cs.x)
	require.NoError(t, err)
	b := make([]byte, 8)
	require.NoError(t, cs.f.Memcpy(sl.Device(), cudart.HostMem(b), cudart.DeviceMem(p, 8), cudart.DeviceToHost))
	return binary.LittleEndian.Uint64(b)
}

// Slot i on device d lends comms[i]'s communicator of device d, on the
// slot's stream: an all-reduce of slot i's ranks, on a goroutine each or in
// one group, is queued on those slots' streams only, and sums their
// buffers.
func TestSlotsLendTheirCommunicators(t *testing.T) {
	const n = 2
	for _, devs := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d-devices", devs), func(t *testing.T) {
			cs := newCommSlots(t, devs, n)
			held := cs.acquireAll(t, devs, n)
			for i := range n {
				lents := make([]nccl.Lent, devs)
				ptrs := make([]cudart.DevicePtr, devs)
				for d, sl := range held[i] {
					var err error
					lents[d], err = pool.Attached[nccl.Lent](sl)
					require.NoError(t, err)
					assert.Equal(t, d, lents[d].Device())
					assert.Equal(t, cs.comms[i][d].Rank(), lents[d].Rank(), "slot %d on device %d lends comms[%d][%d]", i, d, i, d)
					assert.Equal(t, devs, lents[d].Size())
					want, err := sl.Stream()
					require.NoError(t, err)
					got, err := lents[d].Stream()
					require.NoError(t, err)
					assert.Equal(t, want, got, "the slot's stream")
					ptrs[d] = cs.put(t, sl, uint64(10*i+d+1))
				}
				if i == 0 {
					errs := make([]error, devs)
					var wg sync.WaitGroup
					for d := range devs {
						wg.Go(func() { errs[d] = lents[d].AllReduce(ptrs[d], ptrs[d], 1, nccl.Int64, nccl.Sum) })
					}
					wg.Wait()
					for d := range devs {
						require.NoError(t, errs[d], "rank on device %d", d)
					}
				} else {
					ops := make([]nccl.Op, devs)
					for d := range devs {
						ops[d] = lents[d].AllReduceOp(ptrs[d], ptrs[d], 1, nccl.Int64, nccl.Sum)
					}
					require.NoError(t, cs.lib.Group(ops...))
				}
				for d := range devs {
					other, err := held[1-i][d].Stream()
					require.NoError(t, err)
					done, err := cs.f.StreamQuery(d, other)
					require.NoError(t, err)
					assert.True(t, done, "slot %d on device %d: nothing queued on another slot's stream", 1-i, d)
				}
				// Device 0's part, run, runs the other ranks' parts: only the
				// first query finds the all-reduce still queued.
				mine, err := held[i][0].Stream()
				require.NoError(t, err)
				done, err := cs.f.StreamQuery(0, mine)
				require.NoError(t, err)
				assert.False(t, done, "slot %d on device 0: the all-reduce is queued on its stream", i)
				for d := range devs {
					mine, err := held[i][d].Stream()
					require.NoError(t, err)
					require.NoError(t, cs.f.StreamSynchronize(d, mine))
				}
				want := uint64(0)
				for d := range devs {
					want += uint64(10*i + d + 1)
				}
				for d := range devs {
					assert.Equal(t, want, cs.get(t, held[i][d]), "slot %d on device %d: the sum over its ranks", i, d)
				}
			}
			for _, row := range held {
				for _, sl := range row {
					require.NoError(t, cs.m.Release(sl))
				}
			}
		})
	}
}

// A Lent refuses every call once its slot is released, before anything
// reaches NCCL: the slot's next request runs its collectives on the same
// communicators as if nothing had been asked.
func TestLentRefusedAfterRelease(t *testing.T) {
	const devs, n = 2, 1
	cs := newCommSlots(t, devs, n)
	held := cs.acquireAll(t, devs, n)
	lents := make([]nccl.Lent, devs)
	for d, sl := range held[0] {
		var err error
		lents[d], err = pool.Attached[nccl.Lent](sl)
		require.NoError(t, err)
		cs.put(t, sl, uint64(d+1))
	}
	p, err := held[0][0].Ptr(cs.x)
	require.NoError(t, err)
	require.NoError(t, cs.m.Release(held[0][0]))
	old := lents[0]
	require.ErrorIs(t, old.AllReduce(p, p, 1, nccl.Int64, nccl.Sum), pool.ErrSlotReleased)
	require.ErrorIs(t, old.Send(p, 1, nccl.Int64, 1), pool.ErrSlotReleased)
	_, err = old.Stream()
	require.ErrorIs(t, err, pool.ErrSlotReleased)
	q, err := held[0][1].Ptr(cs.x)
	require.NoError(t, err)
	err = cs.lib.Group(old.AllReduceOp(p, p, 1, nccl.Int64, nccl.Sum), lents[1].AllReduceOp(q, q, 1, nccl.Int64, nccl.Sum))
	require.ErrorIs(t, err, pool.ErrSlotReleased, "a group with a released slot's operation posts none of them")

	// The next request on the same slot: its ranks' all-reduce matches.
	again, err := cs.m.On(0).Acquire(context.Background(), "request")
	require.NoError(t, err)
	require.Equal(t, 0, again.Index())
	lent, err := pool.Attached[nccl.Lent](again)
	require.NoError(t, err)
	p = cs.put(t, again, 5)
	require.NoError(t, cs.lib.Group(lent.AllReduceOp(p, p, 1, nccl.Int64, nccl.Sum), lents[1].AllReduceOp(q, q, 1, nccl.Int64, nccl.Sum)))
	for d, sl := range []pool.Slot{again, held[0][1]} {
		s, err := sl.Stream()
		require.NoError(t, err)
		require.NoError(t, cs.f.StreamSynchronize(d, s))
		assert.Equal(t, uint64(7), cs.get(t, sl), "device %d: 5 + 2, the refused calls posted nothing", d)
	}
	require.NoError(t, cs.m.Release(again))
	require.NoError(t, cs.m.Release(held[0][1]))
	require.NoError(t, cs.m.Close())
	require.ErrorIs(t, lent.AllReduce(p, p, 1, nccl.Int64, nccl.Sum), pool.ErrClosed)
	_, err = pool.Attached[nccl.Lent](again)
	require.ErrorIs(t, err, pool.ErrClosed)

	// The slots' Close leaves the communicators to their maker.
	errs := make([]error, devs)
	var wg sync.WaitGroup
	for d := range devs {
		wg.Go(func() { errs[d] = cs.comms[0][d].AllReduce(p, p, 0, nccl.Int64, nccl.Sum, 0) })
	}
	wg.Wait()
	for d := range devs {
		assert.NoError(t, errs[d], "device %d's communicator after the slots' Close", d)
	}
}

// Lending a slot's communicator allocates nothing.
func TestLendAllocatesNothing(t *testing.T) {
	cs := newCommSlots(t, 2, 1)
	sl, err := cs.m.Acquire(context.Background(), "request")
	require.NoError(t, err)
	defer func() { require.NoError(t, cs.m.Release(sl)) }()
	allocs := testing.AllocsPerRun(100, func() {
		l, err := pool.Attached[nccl.Lent](sl)
		if err != nil {
			panic(err)
		}
		if _, err := l.Stream(); err != nil {
			panic(err)
		}
		_ = l.Rank() + l.Size() + l.Device()
	})
	assert.Zero(t, allocs)
}

func TestForSlotsRefusals(t *testing.T) {
	f, lib := openFake(t, 2)
	other, err := nccl.Open(cudarttest.NewFakeT(t, cudarttest.WithDevices(2)))
	require.NoError(t, err)
	var all []*nccl.Comm
	initAll := func(l *nccl.Library) []*nccl.Comm {
		cs, err := l.InitAll([]int{0, 1})
		require.NoError(t, err)
		all = append(all, cs...)
		return cs
	}
	a, b, foreign, gone := initAll(lib), initAll(lib), initAll(other), initAll(lib)
	t.Cleanup(func() {
		for _, c := range all {
			assert.NoError(t, c.Destroy())
		}
	})
	require.NoError(t, gone[0].Destroy())
	pr := pool.NewProfile("request")
	_, err = pr.Device(8, pool.Name("x"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		slots nccl.SlotComms
		want  error
	}{
		{"the zero SlotComms", nccl.SlotComms{}, nccl.ErrClosed},
		{"no slot's communicators", lib.ForSlots(nil), nccl.ErrInvalidOption},
		{"a nil communicator", lib.ForSlots([][]*nccl.Comm{{a[0], nil}}), nccl.ErrInvalidOption},
		{"of another library", lib.ForSlots([][]*nccl.Comm{foreign}), nccl.ErrInvalidOption},
		{"two on one device", lib.ForSlots([][]*nccl.Comm{{a[0], b[0]}}), nccl.ErrInvalidOption},
		{"one in two slots", lib.ForSlots([][]*nccl.Comm{a, {b[0], a[1]}}), nccl.ErrInvalidOption},
		{"destroyed", lib.ForSlots([][]*nccl.Comm{gone}), nccl.ErrClosed},
		{"fewer slots than asked", lib.ForSlots([][]*nccl.Comm{a}), nccl.ErrInvalidOption},
		{"none on a slot's device", lib.ForSlots([][]*nccl.Comm{a, {b[0]}}), nccl.ErrInvalidOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.Live()
			_, err := pool.NewMultiSlots(f, []int{0, 1}, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{tc.slots}})
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, before, f.Live(), "a refused layout leaves nothing")
		})
	}
}
