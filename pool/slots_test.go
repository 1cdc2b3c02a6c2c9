package pool_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// servingLayout is a model's weights and two shapes of its request: staging
// in and out, and three activations of which the first and last are never
// alive together.
type servingLayout struct {
	shared, b1, b8 *pool.Profile
	weights        pool.Ref
	in1, x1, y1    pool.Ref
}

func newServingLayout(t testing.TB) *servingLayout {
	t.Helper()
	l := &servingLayout{shared: pool.NewProfile("shared"), b1: pool.NewProfile("b1"), b8: pool.NewProfile("b8")}
	var err error
	l.weights, err = l.shared.Device(10_000, pool.Name("weights"))
	require.NoError(t, err)
	for _, p := range []struct {
		pr *pool.Profile
		n  uint64
	}{{l.b1, 1}, {l.b8, 8}} {
		in, err := p.pr.Host(1000*p.n, pool.Name("in"))
		require.NoError(t, err)
		_, err = p.pr.Host(1000*p.n, pool.Name("out"))
		require.NoError(t, err)
		x, err := p.pr.Device(4096*p.n, pool.Name("x"), pool.Live(0, 1))
		require.NoError(t, err)
		_, err = p.pr.Device(4096*p.n, pool.Name("h"), pool.Live(1, 2))
		require.NoError(t, err)
		y, err := p.pr.Device(4096*p.n, pool.Name("y"), pool.Live(2, 3))
		require.NoError(t, err)
		if p.n == 1 {
			l.in1, l.x1, l.y1 = in, x, y
		}
	}
	return l
}

func (l *servingLayout) layout() pool.SlotLayout {
	return pool.SlotLayout{Shared: l.shared, Profiles: []*pool.Profile{l.b1, l.b8}}
}

// newSlots is n slots of the serving layout on f, closed at cleanup.
func newSlots(t testing.TB, f cudart.Runtime, n int) (*pool.Slots, *servingLayout) {
	t.Helper()
	l := newServingLayout(t)
	s, err := pool.NewSlots(f, n, l.layout())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, l
}

func TestSlotsTakeSharedPlusNTimesTheLargestProfile(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 3)
	st := s.Stats()
	// b8: x and y share bytes (lifetimes 0..1 and 2..3), h does not: 2 × 32768.
	assert.Equal(t, uint64(2*8*4096), st.SlotDevice)
	assert.Equal(t, uint64(2*8192), st.SlotHost, "in and out, 8000 B each rounded to 256")
	assert.Equal(t, uint64(10_240), st.SharedDevice, "10,000 B rounded to 256")
	assert.Equal(t, st.SharedDevice+3*st.SlotDevice, st.Device)
	assert.Equal(t, st.SharedHost+3*st.SlotHost, st.Host)
	assert.Equal(t, st.Device, st.Pool.Device.Used)
	require.Len(t, st.Profiles, 2)
	assert.Equal(t, "b1", st.Profiles[0].Name)
	assert.Equal(t, uint64(2*4096), st.Profiles[0].Device)
	assert.Equal(t, uint64(3*4096), st.Profiles[0].DeviceUnshared)
	assert.Equal(t, uint64(3*4096), st.Profiles[0].DeviceRequested)
	assert.Equal(t, st.SlotDevice, st.Profiles[1].Device, "the largest profile fills a slot")
	assert.Equal(t, 3, st.Ready)
}

func TestASlotsBuffersStayPutAndSlotsDoNotOverlap(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, l := newSlots(t, f, 3)
	ctx := context.Background()
	first := map[int]cudart.DevicePtr{}
	var weights cudart.DevicePtr
	for round := range 3 {
		var held []pool.Slot
		for range 3 {
			sl, err := s.Acquire(ctx, "b1")
			require.NoError(t, err)
			held = append(held, sl)
			x, err := sl.Ptr(l.x1)
			require.NoError(t, err)
			if round == 0 {
				first[sl.Index()] = x
			}
			assert.Equal(t, first[sl.Index()], x, "slot %d moved", sl.Index())
			w, err := sl.Ptr(l.weights)
			require.NoError(t, err)
			if weights == 0 {
				weights = w
			}
			assert.Equal(t, weights, w, "the shared weights are one buffer")
			byName, err := sl.Lookup("weights")
			require.NoError(t, err)
			assert.Equal(t, l.weights, byName)
			in, err := sl.Bytes(l.in1)
			require.NoError(t, err)
			assert.Len(t, in, 1000)
		}
		for _, sl := range held {
			require.NoError(t, s.Release(sl))
		}
		// Released with nothing queued: a synchronisation completes the
		// events, as time does on a GPU.
		require.NoError(t, f.DeviceSynchronize(0))
	}
	require.Len(t, first, 3)
	st := s.Stats()
	for a := range first {
		for b := range first {
			if a < b {
				d := int64(first[a]) - int64(first[b])
				assert.GreaterOrEqual(t, max(d, -d), int64(st.SlotDevice), "slots %d and %d overlap", a, b)
			}
		}
	}
}

func TestProfilesArePlannedInsideTheSameSlot(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, l := newSlots(t, f, 1)
	ctx := context.Background()
	sl, err := s.Acquire(ctx, "b8")
	require.NoError(t, err)
	assert.Equal(t, "b8", sl.Profile())
	y8, err := sl.Lookup("y")
	require.NoError(t, err)
	assert.Equal(t, uint64(8*4096), y8.Size())
	p8, err := sl.Ptr(y8)
	require.NoError(t, err)
	_, err = sl.Ptr(l.y1)
	assert.ErrorIs(t, err, pool.ErrNotInProfile, "a Ref of profile b1 in a b8 slot")
	stream8, err := sl.Stream()
	require.NoError(t, err)
	require.NoError(t, s.Release(sl))
	require.NoError(t, f.DeviceSynchronize(0))

	sl, err = s.Acquire(ctx, "b1")
	require.NoError(t, err)
	p1, err := sl.Ptr(l.y1)
	require.NoError(t, err)
	stream1, err := sl.Stream()
	require.NoError(t, err)
	assert.Equal(t, stream8, stream1, "one stream per slot, whatever the profile")
	st := s.Stats()
	assert.LessOrEqual(t, uint64(p1)+4096, uint64(p8)+st.SlotDevice, "b1's y lies inside the slot")
	assert.Equal(t, 1, st.Profiles[0].InUse)
	assert.Equal(t, uint64(1), st.Profiles[1].Acquisitions)
	require.NoError(t, s.Release(sl))
}

func TestSlotsRefuseBadInput(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	good := newServingLayout(t).layout()
	empty := pool.NewProfile("empty")
	live := pool.NewProfile("shared")
	_, err := live.Device(256, pool.Live(0, 1))
	require.NoError(t, err)
	clash := pool.NewProfile("clash")
	_, err = clash.Device(256, pool.Name("weights"))
	require.NoError(t, err)
	// Buffers of 2^61 B: nine at steps of their own share 2^61 B in a slot,
	// but their sizes add up past 2^64 B, which the stats could not report;
	// nine shared ones need more than 2^64 B.
	hugeSlot, hugeShared := pool.NewProfile("huge"), pool.NewProfile("shared")
	for i := range 9 {
		_, err = hugeSlot.Device(1<<61, pool.Live(i, i))
		require.NoError(t, err)
		_, err = hugeShared.Device(1 << 61)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		name   string
		n      int
		layout pool.SlotLayout
		want   error
	}{
		{"no slots", 0, good, pool.ErrInvalidOption},
		{"negative slots", -1, good, pool.ErrInvalidOption},
		{"no profile", 2, pool.SlotLayout{}, pool.ErrInvalidRequest},
		{"nil profile", 2, pool.SlotLayout{Profiles: []*pool.Profile{nil}}, pool.ErrInvalidRequest},
		{"empty profile", 2, pool.SlotLayout{Profiles: []*pool.Profile{empty}}, pool.ErrInvalidRequest},
		{"two profiles of one name", 2, pool.SlotLayout{Profiles: []*pool.Profile{good.Profiles[0], good.Profiles[0]}}, pool.ErrInvalidRequest},
		{"shared with Live", 2, pool.SlotLayout{Shared: live, Profiles: good.Profiles}, pool.ErrInvalidRequest},
		{"name shared and per request", 2, pool.SlotLayout{Shared: good.Shared, Profiles: []*pool.Profile{clash}}, pool.ErrInvalidRequest},
		{"profile sizes past 2^64 B", 1, pool.SlotLayout{Profiles: []*pool.Profile{hugeSlot}}, pool.ErrInvalidRequest},
		{"shared sizes past 2^64 B", 1, pool.SlotLayout{Shared: hugeShared, Profiles: good.Profiles}, pool.ErrInvalidOption},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := pool.NewSlots(f, c.n, c.layout)
			assert.ErrorIs(t, err, c.want)
			assert.Nil(t, s)
		})
	}
	_, err = pool.NewSlots(nil, 1, good)
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = empty.Device(0)
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
	_, err = clash.Host(10, pool.Name("weights"))
	assert.ErrorIs(t, err, pool.ErrInvalidRequest, "a name declared twice in one profile")
	_, err = (*pool.Profile)(nil).Device(10)
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
	_, err = clash.Lookup("nope")
	assert.ErrorIs(t, err, pool.ErrNotInProfile)
}

func TestSlotMisuseIsRefused(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, l := newSlots(t, f, 2)
	other, _ := newSlots(t, f, 1)
	ctx := context.Background()

	_, err := s.Acquire(ctx, "b32")
	assert.ErrorIs(t, err, pool.ErrUnknownProfile)
	assert.ErrorContains(t, err, `"b1", "b8"`, "the error lists the profiles")

	sl, err := s.Acquire(ctx, "b1")
	require.NoError(t, err)
	_, err = sl.Lookup("nope")
	assert.ErrorIs(t, err, pool.ErrNotInProfile)
	_, err = sl.Bytes(l.x1)
	assert.ErrorIs(t, err, pool.ErrWrongArena, "x is a device buffer")
	_, err = sl.Ptr(l.in1)
	assert.ErrorIs(t, err, pool.ErrWrongArena, "the host arena is not mapped")
	_, err = sl.Ptr(pool.Ref{})
	assert.ErrorIs(t, err, pool.ErrNotInProfile)

	assert.ErrorIs(t, other.Release(sl), pool.ErrForeignSlot, "released to other slots")
	assert.ErrorIs(t, s.Release(pool.Slot{}), pool.ErrForeignSlot)
	copyOfSl := sl
	require.NoError(t, s.Release(sl))
	assert.ErrorIs(t, s.Release(copyOfSl), pool.ErrSlotReleased, "released twice")
	_, err = sl.Ptr(l.x1)
	assert.ErrorIs(t, err, pool.ErrSlotReleased, "used after Release")
	_, err = sl.Bytes(l.in1)
	assert.ErrorIs(t, err, pool.ErrSlotReleased)
	_, err = sl.Stream()
	assert.ErrorIs(t, err, pool.ErrSlotReleased)
	_, err = sl.Lookup("x")
	assert.ErrorIs(t, err, pool.ErrSlotReleased)
	_, err = pool.Slot{}.Ptr(l.x1)
	assert.ErrorIs(t, err, pool.ErrForeignSlot)

	held, err := s.Acquire(ctx, "b8")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.NoError(t, s.Close(), "Close is idempotent")
	_, err = s.Acquire(ctx, "b1")
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.ErrorIs(t, s.Release(held), pool.ErrClosed)
	_, err = held.Stream()
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.True(t, s.Stats().Closed)

	var zero *pool.Slots
	_, err = zero.Acquire(ctx, "b1")
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.ErrorIs(t, zero.Close(), pool.ErrClosed)
	assert.True(t, zero.Stats().Closed)
}

// waitUntil polls cond for up to ten seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAcquireWaitsInFIFOOrder(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 1)
	ctx := context.Background()
	sl, err := s.Acquire(ctx, "b1")
	require.NoError(t, err)
	const waiters = 5
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Acquire(ctx, "b1")
			if !assert.NoError(t, err) {
				return
			}
			order <- i
			assert.NoError(t, s.Release(got))
		}()
		// The next one queues only once this one waits.
		waitUntil(t, "the waiter queues", func() bool { return s.Stats().Waiting == i+1 })
	}
	require.NoError(t, s.Release(sl))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got)
	st := s.Stats()
	assert.Equal(t, uint64(waiters), st.Profiles[0].Waits)
	assert.Equal(t, uint64(waiters), st.PerSlot[0].Waits)
	assert.Positive(t, st.Profiles[0].WaitTime)
	assert.Equal(t, uint64(waiters+1), st.PerSlot[0].Acquisitions)
}

func TestAcquireHonoursTheDeadline(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 1)
	sl, err := s.Acquire(context.Background(), "b1")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "b8")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, s.Stats().Waiting, "the waiter left the queue")
	_, err = s.Acquire(ctx, "b8")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "an expired context takes no slot")
	require.NoError(t, s.Release(sl))
}

func TestCloseWakesWaiters(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 1)
	_, err := s.Acquire(context.Background(), "b1")
	require.NoError(t, err)
	done := make(chan error)
	go func() {
		_, err := s.Acquire(context.Background(), "b1")
		done <- err
	}()
	waitUntil(t, "the waiter queues", func() bool { return s.Stats().Waiting == 1 })
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-done, pool.ErrClosed)
}

func TestCloseWaitsForEverySlotsStream(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, l := newSlots(t, f, 2)
	dst, err := f.MallocHost(0, 256)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.FreeHost(dst)) }()
	ctx := context.Background()
	a, err := s.Acquire(ctx, "b1")
	require.NoError(t, err)
	b, err := s.Acquire(ctx, "b1")
	require.NoError(t, err)
	for i, sl := range []pool.Slot{a, b} {
		in, err := sl.Bytes(l.in1)
		require.NoError(t, err)
		in[0] = byte(10 + i)
		st, err := sl.Stream()
		require.NoError(t, err)
		require.NoError(t, f.MemcpyAsync(0, cudart.HostMem(dst[i:i+1]), cudart.HostMem(in[:1]), cudart.HostToHost, st))
	}
	require.NoError(t, s.Release(a), "one released, one still held")
	require.NoError(t, s.Close())
	assert.Equal(t, []byte{10, 11}, dst[:2], "the work queued on both streams ran before the arenas were freed")
}

func TestStatsPublishAsJSON(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 2)
	sl, err := s.Acquire(context.Background(), "b8")
	require.NoError(t, err)
	var got pool.SlotsStats
	require.NoError(t, json.Unmarshal([]byte(s.Var().String()), &got))
	assert.Equal(t, 2, got.Slots)
	assert.Equal(t, 1, got.InUse)
	assert.Equal(t, "b8", got.Profiles[1].Name)
	assert.Equal(t, 1, got.Profiles[1].InUse)
	assert.Equal(t, "b8", got.PerSlot[sl.Index()].Profile)
	require.NoError(t, s.Release(sl))
}

func TestAFailedNewSlotsTakesNothing(t *testing.T) {
	for _, c := range []struct {
		call string
		nth  int
	}{{"cudaStreamCreate", 2}, {"cudaStreamCreate", 3}, {"cudaEventCreate", 2}, {"cudaMalloc", 1}} {
		t.Run(c.call, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			require.NoError(t, f.FailCallNth(c.call, c.nth, 2))
			_, err := pool.NewSlots(f, 3, newServingLayout(t).layout())
			require.Error(t, err)
			var ce *cudart.Error
			assert.True(t, errors.As(err, &ce), "%v", err)
		})
	}
}
