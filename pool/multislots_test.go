package pool_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// devices are 0 to n-1.
func devices(n int) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = i
	}
	return d
}

// newMulti is newMultiOn a fake of devs devices of its own.
func newMulti(t *testing.T, devs, n int) (*pool.MultiSlots, *counter, *cudarttest.Fake) {
	t.Helper()
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(devs))
	m, c := newMultiOn(t, f, devs, n)
	return m, c, f
}

// onTwoAndFourDevices runs fn as a subtest with 2 devices, then with 4.
func onTwoAndFourDevices(t *testing.T, fn func(t *testing.T, devs int)) {
	for _, devs := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d-devices", devs), func(t *testing.T) { fn(t, devs) })
	}
}

// newMultiOn is n slots of the serving layout, with a counter attached, on
// each of f's first devs devices, closed at cleanup.
func newMultiOn(t *testing.T, f *cudarttest.Fake, devs, n int) (*pool.MultiSlots, *counter) {
	t.Helper()
	c := newCounter(f, 1024)
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{c}
	m, err := pool.NewMultiSlots(f, devices(devs), n, layout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m, c
}

// Every device gets its slots, their shared buffers and their attachments;
// the first requests spread over the devices.
func TestMultiSlotsPutSlotsOnEveryDevice(t *testing.T) {
	onTwoAndFourDevices(t, func(t *testing.T, devs int) {
		m, c, f := newMulti(t, devs, 2)
		assert.Equal(t, devices(devs), m.Devices())
		st := m.Stats()
		assert.Equal(t, 2*devs, st.Slots)
		assert.Equal(t, 2*devs, st.Ready)
		require.Len(t, st.PerDevice, devs)
		for d := range devs {
			s := m.On(d)
			require.NotNil(t, s)
			w, err := s.Shared(newServingLayout(t).weights)
			require.ErrorIs(t, err, pool.ErrNotInProfile, "a Ref of another layout")
			assert.Nil(t, w)
		}
		assert.Nil(t, m.On(devs))
		perDevice := map[int]int{}
		for _, r := range c.resources {
			perDevice[r.device]++
		}
		for d := range devs {
			assert.Equal(t, 2, perDevice[d], "device %d's slots each have a resource on it", d)
		}

		ctx := context.Background()
		seen := map[int]int{}
		var held []pool.Slot
		for range 2 * devs {
			sl, err := m.Acquire(ctx, "b1")
			require.NoError(t, err)
			held = append(held, sl)
			seen[sl.Device()]++
			lent, err := pool.Attached[lentResource](sl)
			require.NoError(t, err)
			i, err := lent.Index()
			require.NoError(t, err)
			assert.Equal(t, sl.Index(), i)
			for _, r := range c.resources {
				if r.device == sl.Device() && r.index == i {
					assert.Equal(t, must(sl.Stream()), r.stream, "the resource is on the slot's stream")
				}
			}
			st, err := sl.Stream()
			require.NoError(t, err)
			d, err := f.StreamDevice(sl.Device(), st)
			require.NoError(t, err)
			assert.Equal(t, sl.Device(), d, "the slot's stream is its device's")
		}
		for d := range devs {
			assert.Equal(t, 2, seen[d], "device %d", d)
		}
		assert.Equal(t, 2*devs, m.Stats().InUse)
		for _, sl := range held {
			require.NoError(t, m.Release(sl))
		}
	})
}

// With every slot held, waiting calls are served in the order they came,
// each by the first slot freed, whichever device it is on.
func TestMultiSlotsServeWaitersInOrder(t *testing.T) {
	onTwoAndFourDevices(t, func(t *testing.T, devs int) {
		m, _, f := newMulti(t, devs, 1)
		ctx := context.Background()
		var held []pool.Slot
		for range devs {
			held = append(held, must(m.Acquire(ctx, "b8")))
		}
		type served struct {
			waiter int
			sl     pool.Slot
		}
		got := make(chan served)
		for i := range devs {
			go func() {
				sl, err := m.Acquire(ctx, "b1")
				assert.NoError(t, err, "waiter %d", i)
				got <- served{i, sl}
			}()
			require.Eventually(t, func() bool { return m.Stats().Waiting == i+1 }, 5*time.Second, time.Millisecond)
		}
		// Release from the last device back: the k-th slot freed, on
		// whichever device, goes to the k-th waiter.
		var again []pool.Slot
		for k := range devs {
			sl := held[devs-1-k]
			if k%2 == 0 {
				queueWork(t, f, sl) // handed on by the drainer once it has run
			}
			require.NoError(t, m.Release(sl))
			next := <-got
			assert.Equal(t, k, next.waiter, "served in the order they waited")
			assert.Equal(t, sl.Device(), next.sl.Device(), "the slot freed goes to the first waiter")
			assert.Equal(t, "b1", next.sl.Profile())
			again = append(again, next.sl)
		}
		for _, sl := range again {
			require.NoError(t, m.Release(sl))
		}
		st := m.Stats()
		assert.Zero(t, st.Waiting)
		assert.Zero(t, st.InUse)
		for _, ps := range st.PerDevice {
			assert.Zero(t, ps.Waiting, "no waiter left behind on a device")
		}
	})
}

// A waiting call whose context ends takes no slot and loses none.
func TestMultiSlotsCancelledWaitLosesNoSlot(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	ctx := context.Background()
	a, b := must(m.Acquire(ctx, "b1")), must(m.Acquire(ctx, "b1"))
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := m.Acquire(short, "b1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, m.Release(a))
	require.NoError(t, m.Release(b))
	st := m.Stats()
	assert.Zero(t, st.Waiting)
	assert.Equal(t, 2, st.Ready)
	for _, ps := range st.PerDevice {
		assert.Zero(t, ps.Waiting)
	}
	require.NoError(t, m.Release(must(m.Acquire(ctx, "b1"))))
}

// Close wakes the waiting calls with ErrClosed; later calls get it too.
func TestMultiSlotsClose(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	c := newCounter(f, 0)
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{c}
	m, err := pool.NewMultiSlots(f, []int{1, 0}, 1, layout)
	require.NoError(t, err)
	ctx := context.Background()
	held := []pool.Slot{must(m.Acquire(ctx, "b1")), must(m.Acquire(ctx, "b1"))}
	errs := make(chan error)
	go func() {
		_, err := m.Acquire(ctx, "b1")
		errs <- err
	}()
	require.Eventually(t, func() bool { return m.Stats().Waiting == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, m.Close())
	require.ErrorIs(t, <-errs, pool.ErrClosed)
	_, err = m.Acquire(ctx, "b1")
	require.ErrorIs(t, err, pool.ErrClosed)
	require.ErrorIs(t, m.Release(held[0]), pool.ErrClosed)
	require.NoError(t, m.Close(), "idempotent")
	assert.True(t, m.Stats().Closed)
	for _, r := range c.resources {
		assert.True(t, r.closed, "device %d slot %d", r.device, r.index)
	}
	require.NoError(t, f.CheckLeaks())
}

func TestMultiSlotsRefusals(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	l := newServingLayout(t)
	_, err := pool.NewMultiSlots(f, nil, 1, l.layout())
	require.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = pool.NewMultiSlots(f, []int{0, 1, 0}, 1, l.layout())
	require.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = pool.NewMultiSlots(f, []int{0, 2}, 1, l.layout())
	require.ErrorIs(t, err, pool.ErrInvalidOption, "no device 2")
	require.NoError(t, f.CheckLeaks(), "device 0's slots are closed")

	m, _ := newMultiOn(t, f, 2, 1)
	ctx := context.Background()
	_, err = m.Acquire(ctx, "b2")
	require.ErrorIs(t, err, pool.ErrUnknownProfile)
	other, _ := newSlots(t, f, 1)
	sl := must(other.Acquire(ctx, "b1"))
	require.ErrorIs(t, m.Release(sl), pool.ErrForeignSlot)
	require.ErrorIs(t, m.Release(pool.Slot{}), pool.ErrForeignSlot)
	require.NoError(t, other.Release(sl))
	var zero pool.MultiSlots
	_, err = zero.Acquire(ctx, "b1")
	require.ErrorIs(t, err, pool.ErrClosed)
}

// A device whose slots cannot be made fails NewMultiSlots, which closes the
// devices' slots made before it.
func TestMultiSlotsFailingDeviceLeavesNothing(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(4))
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{failOn{device: 2}}
	_, err := pool.NewMultiSlots(f, devices(4), 2, layout)
	require.ErrorIs(t, err, errAttach)
	require.ErrorContains(t, err, "device 2")
	require.NoError(t, f.CheckLeaks())
}

// failOn fails to attach on one device.
type failOn struct{ device int }

func (failOn) Scratch() (uint64, error) { return 0, nil }
func (a failOn) Attach(device, _ int, _ cudart.Stream, _ cudart.DevicePtr, _ uint64) (io.Closer, error) {
	if device == a.device {
		return nil, errAttach
	}
	return io.NopCloser(nil), nil
}

// Many goroutines acquire and release across the devices at once, some
// with work queued at release: every request gets a slot, no two hold one
// at once, and nothing is left waiting or held.
func TestMultiSlotsUnderLoad(t *testing.T) {
	onTwoAndFourDevices(t, func(t *testing.T, devs int) {
		m, _, f := newMulti(t, devs, 2)
		ctx := context.Background()
		var mu sync.Mutex
		holding := map[[2]int]bool{}
		perDevice := make([]int, devs)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for r := range 50 {
					sl, err := m.Acquire(ctx, []string{"b1", "b8"}[r%2])
					if !assert.NoError(t, err) {
						return
					}
					key := [2]int{sl.Device(), sl.Index()}
					mu.Lock()
					assert.False(t, holding[key], "slot %v held twice", key)
					holding[key] = true
					perDevice[sl.Device()]++
					mu.Unlock()
					if (w+r)%3 == 0 {
						queueWork(t, f, sl)
					}
					mu.Lock()
					holding[key] = false
					mu.Unlock()
					if !assert.NoError(t, m.Release(sl)) {
						return
					}
				}
			})
		}
		wg.Wait()
		for d, n := range perDevice {
			assert.Positive(t, n, "device %d served requests", d)
		}
		st := m.Stats()
		assert.Zero(t, st.Waiting)
		assert.Zero(t, st.InUse)
		var acquisitions uint64
		for _, ps := range st.PerDevice {
			assert.Zero(t, ps.Waiting)
			for _, p := range ps.Profiles {
				acquisitions += p.Acquisitions
			}
		}
		assert.Equal(t, uint64(16*50), acquisitions)
	})
}

// Acquire and Release of a free slot allocate nothing, as on one device.
func TestMultiSlotsAllocateNothing(t *testing.T) {
	m, _, _ := newMulti(t, 2, 1)
	allocatesNothing(t, acquireRelease(m))
}

// allocatesNothing asserts that op allocates nothing, run 100 times; an
// error from op panics, as AllocsPerRun has no way to report it.
func allocatesNothing(t *testing.T, op func() error) {
	t.Helper()
	allocs := testing.AllocsPerRun(100, func() {
		if err := op(); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}
