package pool_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestOneProfileSharedAndPerRequestIsRefused is the first reproduction of
// issue 27: a Profile given as Shared and as a per-request profile was
// accepted, and every slot's Ptr of its buffer was the one shared copy, so
// two requests wrote the same bytes.
func TestOneProfileSharedAndPerRequestIsRefused(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	pr := pool.NewProfile("p")
	_, err := pr.Device(4096)
	require.NoError(t, err)
	s, err := pool.NewSlots(f, 2, pool.SlotLayout{Shared: pr, Profiles: []*pool.Profile{pr}})
	if err == nil {
		ctx := context.Background()
		a, b := must(s.Acquire(ctx, "p")), must(s.Acquire(ctx, "p"))
		r := must(pr.Lookup(""))
		pa, pb := must(a.Ptr(r)), must(b.Ptr(r))
		assert.NoError(t, s.Close())
		t.Fatalf("accepted: two held slots have the buffer at %#x and %#x", pa, pb)
	}
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
	assert.ErrorContains(t, err, `profile "p" is both Shared and one of Profiles`)
	assert.Nil(t, s)
	assert.Empty(t, f.Calls(), "refused before any CUDA call")
}

// TestSlotCountsTheDeviceCannotHoldAreRefusedFirst is the second
// reproduction: a count past what a slice holds panicked in make, and one
// whose memory could never fit made a stream and an event per slot before
// the size was looked at. Both are refused before any per-slot CUDA call.
func TestSlotCountsTheDeviceCannotHoldAreRefusedFirst(t *testing.T) {
	tiny, mibProfile, hostOnly := pool.NewProfile("tiny"), pool.NewProfile("mib"), pool.NewProfile("host")
	_, err := tiny.Device(256)
	require.NoError(t, err)
	_, err = mibProfile.Device(mib)
	require.NoError(t, err)
	_, err = hostOnly.Host(256)
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		n       int
		pr      *pool.Profile
		message string
	}{
		{"2^50 tiny slots", 1 << 50, tiny, "want 1 to 2147483647"},
		{"MaxSlots+1 host slots", pool.MaxSlots + 1, hostOnly, "want 1 to 2147483647"},
		{"2^18 slots of 1 MiB on 80 GiB", 1 << 18, mibProfile, "262144 slots of 1.0 MiB and 0 B shared need 256 GiB (274877906944 B) of device memory; device 0 has 80 GiB (85899345920 B) free"},
		{"2^20 slots of 1 MiB on 80 GiB", 1 << 20, mibProfile, "need 1.0 TiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(80<<30))
			var s *pool.Slots
			require.NotPanics(t, func() {
				s, err = pool.NewSlots(f, c.n, pool.SlotLayout{Profiles: []*pool.Profile{c.pr}})
			})
			assert.ErrorIs(t, err, pool.ErrInvalidOption)
			assert.ErrorContains(t, err, c.message)
			assert.Nil(t, s)
			for _, call := range f.Calls() {
				assert.Contains(t, []string{"cudaGetDeviceCount", "cudaMemGetInfo"}, call, "only the device is looked at")
			}
			assert.True(t, f.Live().Empty())
		})
	}
}

// TestSlotsAfterAResetFailAndCloseOnce is the third reproduction: after a
// reset Acquire succeeded, Slot.Ptr returned memory the reset freed,
// Release failed on the dead stream and Close never returned nil. Now
// Acquire, Stream, Ptr and Bytes say the device was reset, Release gives
// the slot back without asking CUDA (and hands it on to a waiter, which
// fails the same way), and Close says so once, destroying nothing the reset
// destroyed, then returns nil. After a fatal fault and the reset the device
// is lost: new slots fail with cudart.ErrDevicesUnavailable.
func TestSlotsAfterAResetFailAndCloseOnce(t *testing.T) {
	for _, c := range []struct {
		fatal, growable bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		fatal := c.fatal
		t.Run(fmt.Sprintf("fatal=%t/growable=%t", c.fatal, c.growable), func(t *testing.T) {
			// Not NewFakeT: a lost device keeps a growable arena's virtual
			// memory until the process ends, which is checked below.
			f := cudarttest.NewFake()
			l := newServingLayout(t)
			var opts []pool.Option
			if c.growable {
				opts = append(opts, pool.WithGrowableDevice(64*mib))
			}
			s, err := pool.NewSlots(f, 2, l.layout(), opts...)
			require.NoError(t, err)
			ctx := context.Background()
			held, other := must(s.Acquire(ctx, "b1")), must(s.Acquire(ctx, "b8"))
			waited := make(chan error, 1)
			go func() {
				_, err := s.Acquire(ctx, "b1")
				waited <- err
			}()
			waitUntil(t, "the third Acquire waits", func() bool { return s.Stats().Waiting == 1 })
			if fatal {
				stickyFault(t, f)
			}
			require.NoError(t, f.DeviceReset(0))

			// Bounded: before the fix this Acquire waited for a slot.
			bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = s.Acquire(bounded, "b1")
			cancel()
			assert.ErrorIs(t, err, pool.ErrDeviceReset)
			_, err = held.Ptr(l.x1)
			assert.ErrorIs(t, err, pool.ErrDeviceReset)
			_, err = held.Bytes(l.in1)
			assert.ErrorIs(t, err, pool.ErrDeviceReset)
			_, err = held.Stream()
			assert.ErrorIs(t, err, pool.ErrDeviceReset)
			f.ResetCalls()
			assert.NoError(t, s.Release(held), "the dead stream is not asked about")
			assert.ErrorIs(t, <-waited, pool.ErrDeviceReset, "the waiter handed the slot")
			assert.NoError(t, s.Release(other))
			st := s.Stats()
			assert.Equal(t, 2, st.Ready+st.Draining, "no slot lost: %+v", st)

			err = s.Close()
			assert.ErrorIs(t, err, pool.ErrDeviceReset)
			if fatal && c.growable {
				assert.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "the growable arena could only be forgotten")
			}
			for _, call := range f.Calls() {
				assert.NotContains(t, []string{"cudaStreamDestroy", "cudaEventDestroy", "cudaFree", "cudaHostUnregister", "cudaFreeHost"}, call,
					"nothing the reset destroyed is destroyed again")
			}
			assert.NoError(t, s.Close(), "a second Close")
			_, err = s.Acquire(ctx, "b1")
			assert.ErrorIs(t, err, pool.ErrClosed, "closed comes first")
			left := f.Live()
			if fatal && c.growable {
				left.PhysAllocs, left.PhysBytes, left.Reservations, left.ReservedBytes, left.Mappings, left.MappedBytes = 0, 0, 0, 0, 0, 0
			}
			assert.True(t, left.Empty(), "nothing left but a lost device's virtual memory: %+v", left)

			again, err := pool.NewSlots(f, 2, l.layout(), opts...)
			if fatal {
				assert.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "the device is lost until the process ends")
				return
			}
			require.NoError(t, err, "a plain reset leaves the device usable")
			require.NoError(t, again.Close())
		})
	}
}

// TestSlotsStatsCountEverySlotUnderLoad: in every snapshot InUse, Ready and
// Draining add up to the slots, while 16 goroutines serve from 4 slots,
// each queueing work, so that slots are handed to waiters, asked about and
// drained.
func TestSlotsStatsCountEverySlotUnderLoad(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 4)
	ctx := context.Background()
	const workers, requests = 16, 50
	var serving sync.WaitGroup
	done := make(chan struct{})
	for w := range workers {
		serving.Go(func() {
			for range requests {
				sl, err := s.Acquire(ctx, []string{"b1", "b8"}[w%2])
				if !assert.NoError(t, err) {
					return
				}
				if w%3 == 0 {
					// Work still queued at Release: the slot drains.
					queueWork(t, f, sl)
				}
				// Held a while, so that the others wait and are handed
				// slots.
				time.Sleep(20 * time.Microsecond)
				assert.NoError(t, s.Release(sl))
			}
		})
	}
	var snapshots, handedOff int
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-done:
				return
			default:
			}
			st := s.Stats()
			snapshots++
			if st.Waiting > 0 && st.InUse > 0 {
				handedOff++
			}
			inUse := 0
			for _, ps := range st.PerSlot {
				if ps.InUse {
					inUse++
				}
			}
			perProfile := 0
			for _, ps := range st.Profiles {
				perProfile += ps.InUse
			}
			if !assert.Equal(t, st.Slots, st.InUse+st.Ready+st.Draining, "%+v", st) ||
				!assert.Equal(t, st.InUse, inUse, "per slot") || !assert.Equal(t, st.InUse, perProfile, "per profile") {
				return
			}
		}
	}()
	serving.Wait()
	close(done)
	<-polled
	t.Logf("%d snapshots, %d with calls waiting", snapshots, handedOff)
	assert.Positive(t, snapshots)
	st := s.Stats()
	assert.Equal(t, 4, st.Ready+st.Draining)
	var acquisitions, waits uint64
	for _, ps := range st.PerSlot {
		acquisitions += ps.Acquisitions
		waits += ps.Waits
	}
	assert.Equal(t, uint64(workers*requests), acquisitions, "each Acquire that returned a slot counted once")
	assert.Positive(t, waits, "requests waited, and were handed slots")
}

// TestAHandedOffSlotCountsInUse: a slot released to a waiting Acquire is
// the waiter's from that moment, before the waiter runs again.
func TestAHandedOffSlotCountsInUse(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, _ := newSlots(t, f, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sl := must(s.Acquire(ctx, "b1"))
	got := make(chan pool.Slot)
	go func() {
		w, err := s.Acquire(ctx, "b8")
		assert.NoError(t, err)
		got <- w
	}()
	waitUntil(t, "the second Acquire waits", func() bool { return s.Stats().Waiting == 1 })
	require.NoError(t, s.Release(sl))
	st := s.Stats()
	assert.Equal(t, 1, st.InUse, "%+v", st)
	assert.Equal(t, "b8", st.PerSlot[0].Profile)
	require.NoError(t, s.Release(<-got))
}

// TestAcquireReturnsAFailedQueryAndLosesNoSlot: when CUDA cannot say
// whether a released slot's work (long, which no query finds done) has
// finished, Acquire returns CUDA's
// error, wrapped, as documented, and the slot stays queued: once CUDA
// answers again it is handed out.
func TestAcquireReturnsAFailedQueryAndLosesNoSlot(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithLongWork())
	s, _ := newSlots(t, f, 1)
	ctx := context.Background()
	sl := must(s.Acquire(ctx, "b1"))
	queueWork(t, f, sl)
	require.NoError(t, s.Release(sl))
	require.Equal(t, 1, s.Stats().Draining)
	for _, call := range []string{"cudaStreamQuery", "cudaStreamSynchronize"} {
		require.NoError(t, f.FailCallNth(call, 1, 999))
	}
	_, err := s.Acquire(ctx, "b1")
	var ce *cudart.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cudart.Code(999), ce.Code)
	assert.Equal(t, 1, s.Stats().Draining, "the slot stays queued")
	_, err = s.Acquire(ctx, "b1")
	require.ErrorAs(t, err, &ce, "the waiter gets the failed synchronisation")
	assert.Contains(t, err.Error(), "cudaStreamSynchronize")
	again, err := s.Acquire(ctx, "b8")
	require.NoError(t, err, "CUDA answers again")
	require.NoError(t, s.Release(again))
	stats := s.Stats()
	assert.Equal(t, 1, stats.Ready+stats.Draining)
	assert.True(t, slices.ContainsFunc(stats.PerSlot, func(ps pool.SlotStats) bool { return ps.Acquisitions == 2 }))
}

// queueWork queues a copy of the slot's input to its device on its stream:
// work that has not run when Release asks.
func queueWork(t *testing.T, f *cudarttest.Fake, sl pool.Slot) {
	in := must(sl.Bytes(must(sl.Lookup("in"))))
	x := must(sl.Ptr(must(sl.Lookup("x"))))
	assert.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(x, uint64(len(in))), cudart.HostMem(in), cudart.HostToDevice, must(sl.Stream())))
}
