package pool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// acquireGroup acquires a group in the background, its outcome sent on the
// channel returned.
func acquireGroup(ctx context.Context, m *pool.MultiSlots, profile string) <-chan groupOutcome {
	out := make(chan groupOutcome, 1)
	go func() {
		g, err := m.AcquireGroup(ctx, profile)
		out <- groupOutcome{g, err}
	}()
	return out
}

type groupOutcome struct {
	g   pool.SlotGroup
	err error
}

// acquireOn acquires a slot of device d's Slots in the background.
func acquireOn(m *pool.MultiSlots, d int) <-chan pool.Slot {
	out := make(chan pool.Slot, 1)
	go func() { out <- must(m.On(d).Acquire(context.Background(), "b1")) }()
	return out
}

// checkGroup asserts that g holds slot g.Index() of every device, in the
// order of Devices, each lending its own resource.
func checkGroup(t *testing.T, m *pool.MultiSlots, g pool.SlotGroup, profile string) {
	t.Helper()
	devs := m.Devices()
	require.Equal(t, len(devs), g.Len())
	assert.Equal(t, profile, g.Profile())
	for i, sl := range g.Slots() {
		assert.Equal(t, g.Index(), sl.Index(), "member %d", i)
		assert.Equal(t, devs[i], sl.Device())
		assert.Equal(t, sl, g.On(devs[i]))
		assert.Equal(t, sl, g.At(i))
		assert.Equal(t, profile, sl.Profile())
		lent, err := pool.Attached[lentResource](sl)
		require.NoError(t, err)
		idx, err := lent.Index()
		require.NoError(t, err)
		assert.Equal(t, g.Index(), idx, "the member's resource is its slot's")
	}
}

// Groups free at once: one index on every device, each index once.
func TestAcquireGroupTakesOneIndexOnEveryDevice(t *testing.T) {
	for _, tc := range []struct{ devs, n int }{{1, 1}, {1, 3}, {2, 1}, {2, 3}, {4, 2}} {
		t.Run(fmt.Sprintf("%d-devices-%d-slots", tc.devs, tc.n), func(t *testing.T) {
			m, _, _ := newMulti(t, tc.devs, tc.n)
			ctx := context.Background()
			seen := map[int]bool{}
			var held []pool.SlotGroup
			for range tc.n {
				g, err := m.AcquireGroup(ctx, "b8")
				require.NoError(t, err)
				assert.False(t, seen[g.Index()], "index %d handed out twice", g.Index())
				seen[g.Index()] = true
				checkGroup(t, m, g, "b8")
				held = append(held, g)
			}
			st := m.Stats()
			assert.Equal(t, tc.devs*tc.n, st.InUse)
			assert.Zero(t, st.WaitingGroups)
			for _, g := range held {
				require.NoError(t, g.Release())
			}
			st = m.Stats()
			assert.Zero(t, st.InUse)
			assert.Equal(t, tc.devs*tc.n, st.Ready)
		})
	}
}

// A group waits for the index it reserved, taking its slot on each device
// as it is freed, while the other slots serve the calls behind it.
func TestAcquireGroupReservesAnIndexAndPassesTheOthersOn(t *testing.T) {
	m, _, _ := newMulti(t, 2, 2)
	ctx := context.Background()
	// Slot 0 held on device 0, slot 1 on device 1: no index free on both.
	a := must(m.On(0).Acquire(ctx, "b1"))
	require.Equal(t, 0, a.Index())
	b0, b1 := must(m.On(1).Acquire(ctx, "b1")), must(m.On(1).Acquire(ctx, "b1"))
	require.Equal(t, 1, b1.Index())
	require.NoError(t, m.Release(b0))

	got := acquireGroup(ctx, m, "b1")
	waitUntil(t, "the group waits", func() bool { return m.Stats().WaitingGroups == 1 })
	st := m.Stats()
	assert.Equal(t, 2, st.PerDevice[0].InUse, "it took slot 1 of device 0, the first free: %+v", st)
	assert.Equal(t, 1, st.PerDevice[1].Waiting, "it waits for slot 1 of device 1")

	// Slot 0 of device 1 is not its: free for the calls after it.
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	other, err := m.On(1).Acquire(bounded, "b1")
	require.NoError(t, err, "a free slot is not held back behind a group waiting for another")
	assert.Equal(t, 0, other.Index())
	behind := acquireOn(m, 1)
	waitUntil(t, "an Acquire waits behind the group", func() bool { return m.Stats().PerDevice[1].Waiting == 2 })
	require.NoError(t, m.Release(b1))
	out := <-got
	require.NoError(t, out.err)
	assert.Equal(t, 1, out.g.Index(), "the slot freed went to the group, which came first")
	checkGroup(t, m, out.g, "b1")
	require.NoError(t, m.Release(other))
	require.NoError(t, m.Release(<-behind), "the call behind got the next slot freed")
	require.NoError(t, m.Release(a))
	require.NoError(t, out.g.Release())
	st = m.Stats()
	assert.Zero(t, st.InUse+st.Waiting+st.WaitingGroups+st.PerDevice[0].Waiting+st.PerDevice[1].Waiting, "%+v", st)
}

// An Acquire waiting before a group is served before it.
func TestAcquireGroupWaitsBehindEarlierCalls(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	ctx := context.Background()
	h := must(m.On(1).Acquire(ctx, "b1"))
	first := acquireOn(m, 1)
	waitUntil(t, "an Acquire waits", func() bool { return m.Stats().PerDevice[1].Waiting == 1 })
	got := acquireGroup(ctx, m, "b8")
	waitUntil(t, "the group waits", func() bool { return m.Stats().WaitingGroups == 1 })
	require.NoError(t, m.Release(h))
	sl := <-first
	assert.Equal(t, 1, m.Stats().WaitingGroups, "the group waits still")
	require.NoError(t, m.Release(sl))
	out := <-got
	require.NoError(t, out.err)
	checkGroup(t, m, out.g, "b8")
	require.NoError(t, out.g.Release())
}

// A group that gives up gives back the slots it took, and lets its index
// go: a group waiting for any index takes it.
func TestAcquireGroupCancelledGivesBackItsIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		end  func(cancel context.CancelFunc) // ends the first group's wait
		err  error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func(cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 500*time.Millisecond)
		}, func(context.CancelFunc) {}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := newMulti(t, 2, 1)
			h := must(m.On(1).Acquire(context.Background(), "b1"))
			ctx, cancel := tc.ctx()
			defer cancel()
			first := acquireGroup(ctx, m, "b1")
			waitUntil(t, "the first group waits", func() bool { return m.Stats().WaitingGroups == 1 })
			require.Equal(t, 1, m.Stats().PerDevice[0].InUse, "it took slot 0 of device 0")
			second := acquireGroup(context.Background(), m, "b8")
			waitUntil(t, "the second group waits", func() bool { return m.Stats().WaitingGroups == 2 })
			tc.end(cancel)
			out := <-first
			require.ErrorIs(t, out.err, tc.err)
			assert.Equal(t, -1, out.g.Index())
			waitUntil(t, "the second group takes slot 0 of device 0", func() bool {
				st := m.Stats()
				return st.WaitingGroups == 1 && st.PerDevice[0].InUse == 1
			})
			require.NoError(t, m.Release(h))
			out = <-second
			require.NoError(t, out.err)
			checkGroup(t, m, out.g, "b8")
			require.NoError(t, out.g.Release())
			st := m.Stats()
			assert.Zero(t, st.InUse+st.WaitingGroups+st.PerDevice[0].Waiting+st.PerDevice[1].Waiting, "%+v", st)
			assert.Equal(t, 2, st.Ready)
			var served uint64
			for _, ps := range st.PerDevice {
				served += ps.Profiles[1].Acquisitions
			}
			assert.Equal(t, uint64(2), served, "the group given up is not counted")
		})
	}
}

// A context done before the call takes nothing, even with slots free.
func TestAcquireGroupDoneContext(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.AcquireGroup(ctx, "b1")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, m.Stats().Ready)
}

// Close wakes a waiting group with ErrClosed, which gives back what it took;
// later calls and the Release of a group held get ErrClosed too.
func TestAcquireGroupClose(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	layout := newServingLayout(t).layout()
	m, err := pool.NewMultiSlots(f, []int{0, 1}, 2, layout)
	require.NoError(t, err)
	ctx := context.Background()
	held := must(m.AcquireGroup(ctx, "b1"))
	h := must(m.On(1).Acquire(ctx, "b1"))
	got := acquireGroup(ctx, m, "b1")
	waitUntil(t, "the group waits", func() bool { return m.Stats().WaitingGroups == 1 })
	require.NoError(t, m.Close())
	out := <-got
	require.ErrorIs(t, out.err, pool.ErrClosed)
	_, err = m.AcquireGroup(ctx, "b1")
	require.ErrorIs(t, err, pool.ErrClosed)
	require.ErrorIs(t, held.Release(), pool.ErrClosed)
	require.ErrorIs(t, m.Release(h), pool.ErrClosed)
	_, err = held.At(0).Stream()
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Zero(t, m.Stats().WaitingGroups)
	require.NoError(t, f.CheckLeaks())
}

// A reset of one device fails the group waiting for its slot there with
// ErrDeviceReset, naming it, and every later AcquireGroup.
func TestAcquireGroupDeviceReset(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	m, err := pool.NewMultiSlots(f, []int{0, 1}, 1, newServingLayout(t).layout())
	require.NoError(t, err)
	ctx := context.Background()
	h := must(m.On(1).Acquire(ctx, "b1"))
	got := acquireGroup(ctx, m, "b1")
	waitUntil(t, "the group waits", func() bool { return m.Stats().WaitingGroups == 1 })
	require.NoError(t, f.DeviceReset(1))
	require.NoError(t, m.Release(h))
	out := <-got
	require.ErrorIs(t, out.err, pool.ErrDeviceReset)
	assert.ErrorContains(t, out.err, "device 1")
	_, err = m.AcquireGroup(ctx, "b1")
	require.ErrorIs(t, err, pool.ErrDeviceReset)
	st := m.Stats()
	assert.Zero(t, st.InUse+st.WaitingGroups, "%+v", st)
	assert.ErrorIs(t, m.Close(), pool.ErrDeviceReset)
}

// When CUDA cannot say whether the slot a group waits for has finished its
// work, the group gets CUDA's error and holds nothing.
func TestAcquireGroupFailedSynchronisation(t *testing.T) {
	m, _, f := newMulti(t, 2, 1)
	ctx := context.Background()
	sl := must(m.On(1).Acquire(ctx, "b1"))
	queueWork(t, f, sl)
	require.NoError(t, f.FailCallNth("cudaStreamQuery", 1, 999))
	require.Error(t, m.Release(sl), "given back, to be synchronised")
	require.Equal(t, 1, m.Stats().Draining)
	require.NoError(t, f.FailCallNth("cudaStreamSynchronize", 1, 999))
	_, err := m.AcquireGroup(ctx, "b1")
	var ce *cudart.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cudart.Code(999), ce.Code)
	assert.ErrorContains(t, err, "device 1")
	assert.Zero(t, m.Stats().InUse)
	g, err := m.AcquireGroup(ctx, "b1")
	require.NoError(t, err, "CUDA answers again")
	require.NoError(t, g.Release())
}

func TestAcquireGroupRefusals(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	ctx := context.Background()
	_, err := m.AcquireGroup(ctx, "b2")
	require.ErrorIs(t, err, pool.ErrUnknownProfile)
	var zero pool.MultiSlots
	_, err = zero.AcquireGroup(ctx, "b1")
	require.ErrorIs(t, err, pool.ErrClosed)

	var none pool.SlotGroup
	assert.Equal(t, -1, none.Index())
	assert.Zero(t, none.Len())
	assert.Empty(t, none.Profile())
	assert.Equal(t, pool.Slot{}, none.At(0))
	assert.Equal(t, pool.Slot{}, none.On(0))
	require.ErrorIs(t, none.Release(), pool.ErrForeignSlot)

	g := must(m.AcquireGroup(ctx, "b1"))
	assert.Equal(t, pool.Slot{}, g.At(2))
	assert.Equal(t, pool.Slot{}, g.On(5))
	require.NoError(t, g.Release())
	require.ErrorIs(t, g.Release(), pool.ErrSlotReleased)
}

// A group once released refuses to be used, even with its index held by a
// group after it; so do its members' resources.
func TestSlotGroupReleasedIsRefused(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	ctx := context.Background()
	old := must(m.AcquireGroup(ctx, "b1"))
	lent, err := pool.Attached[lentResource](old.At(1))
	require.NoError(t, err)
	require.NoError(t, old.Release())
	again := must(m.AcquireGroup(ctx, "b8"))
	require.Equal(t, old.Index(), again.Index())
	for i := range old.Len() {
		_, err := old.At(i).Stream()
		require.ErrorIs(t, err, pool.ErrSlotReleased, "member %d", i)
		_, err = pool.Attached[lentResource](old.At(i))
		require.ErrorIs(t, err, pool.ErrSlotReleased)
		require.ErrorIs(t, m.Release(old.At(i)), pool.ErrSlotReleased)
	}
	_, err = lent.Index()
	require.ErrorIs(t, err, pool.ErrSlotReleased)
	require.ErrorIs(t, old.Release(), pool.ErrSlotReleased)
	checkGroup(t, m, again, "b8")

	// A member given back on its own is free for any call.
	require.NoError(t, m.Release(again.At(0)))
	sl := must(m.On(0).Acquire(ctx, "b1"))
	require.ErrorIs(t, again.Release(), pool.ErrSlotReleased)
	require.NoError(t, m.Release(sl))
	st := m.Stats()
	assert.Zero(t, st.InUse, "the group's other member went back: %+v", st)
}

// AcquireGroup and Release of a group free at once allocate nothing.
func TestAcquireGroupAllocatesNothing(t *testing.T) {
	m, _, _ := newMulti(t, 4, 2)
	ctx := context.Background()
	allocatesNothing(t, func() error {
		g, err := m.AcquireGroup(ctx, "b1")
		if err != nil {
			return err
		}
		if g.On(2).Index() != g.Index() {
			panic("not one index")
		}
		return g.Release()
	})
}
