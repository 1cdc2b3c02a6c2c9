package pool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// TestAFailedEventDestroyIsRetried is the fourth reproduction of issue 27:
// a Close whose cudaEventDestroy failed forgot the event, and the next Close
// returned nil with the event leaked.
func TestAFailedEventDestroyIsRetried(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	st, err := f.StreamCreate(0)
	require.NoError(t, err)
	p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(st))
	require.NoError(t, err)
	require.NoError(t, f.FailCallNth("cudaEventDestroy", 1, 1))
	assert.ErrorIs(t, p.Close(), cudart.ErrInvalidValue)
	require.NoError(t, p.Close())
	require.NoError(t, f.StreamDestroy(0, st))
	assert.NoError(t, f.CheckLeaks(), "the second Close destroyed the event")
}

// closeCase is something whose Close a sweep fails call by call: open
// makes it on f and returns its Close, and what the caller destroys itself
// once Close has returned nil (streams it made).
type closeCase struct {
	name string
	fake []cudarttest.Option
	open func(t *testing.T, f *cudarttest.Fake) (close, after func() error)
}

// userStreams makes n streams the caller owns, and what destroys them.
func userStreams(t *testing.T, f *cudarttest.Fake, n int) ([]cudart.Stream, func() error) {
	var ss []cudart.Stream
	for range n {
		s, err := f.StreamCreate(0)
		require.NoError(t, err)
		ss = append(ss, s)
	}
	return ss, func() error {
		for _, s := range ss {
			if err := f.StreamDestroy(0, s); err != nil {
				return err
			}
		}
		return nil
	}
}

// poolCloseCase is a pool with opts and two streams of the caller, a
// buffer placed in every arena and work queued on a stream.
func poolCloseCase(name string, fake []cudarttest.Option, opts ...pool.Option) closeCase {
	return closeCase{name: name, fake: fake, open: func(t *testing.T, f *cudarttest.Fake) (func() error, func() error) {
		ss, destroy := userStreams(t, f, 2)
		p, err := pool.New(f, append(opts, pool.WithStreams(ss...))...)
		require.NoError(t, err)
		bufs := placeInEveryArena(t, p)
		ptr, err := bufs[0].Ptr()
		require.NoError(t, err)
		require.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(ptr, 16), cudart.HostMem(make([]byte, 16)), cudart.HostToDevice, ss[1]))
		return p.Close, destroy
	}}
}

// slotsCloseCase is Slots with a stream of the caller, one slot held, one
// released with work queued and one free; with cuBLAS handles when blas is
// set.
func slotsCloseCase(name string, blas bool, opts ...pool.Option) closeCase {
	return closeCase{name: name, open: func(t *testing.T, f *cudarttest.Fake) (func() error, func() error) {
		ss, destroy := userStreams(t, f, 1)
		layout := newServingLayout(t).layout()
		if blas {
			layout.Attach = []pool.Attachment{must(cublas.Open(f)).ForSlots(cublas.MinWorkspace)}
		}
		s, err := pool.NewSlots(f, 3, layout, append(opts, pool.WithStreams(ss...))...)
		require.NoError(t, err)
		ctx := context.Background()
		must(s.Acquire(ctx, "b1"))
		busy := must(s.Acquire(ctx, "b8"))
		queueWork(t, f, busy)
		require.NoError(t, s.Release(busy))
		return s.Close, destroy
	}}
}

func closeCases() []closeCase {
	twoDevices := []cudarttest.Option{cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1)}
	return []closeCase{
		poolCloseCase("pool/fixed-registered-managed", nil, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithManagedBytes(mib)),
		poolCloseCase("pool/fixed-hostalloc-mapped", nil, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib),
			pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithHostFlags(pinned.Mapped)),
		poolCloseCase("pool/everything", twoDevices, pool.WithGrowableDevice(64*mib), pool.WithPeerAccess(1), pool.WithHostBytes(mib),
			pool.WithHostFlags(pinned.Mapped), pool.WithManagedBytes(4*mib), pool.WithMallocHeap(16*mib)),
		slotsCloseCase("slots", false),
		slotsCloseCase("slots/hostalloc", false, pool.WithHostPinning(pinned.MethodHostAlloc)),
		slotsCloseCase("slots/cublas", true),
	}
}

// TestEveryCloseRetriesWhatItCouldNotFree runs each Close once to record
// its CUDA calls, then once per call with that call failing: Close reports
// the failure, wrapped; Close is called again until it returns nil, each
// call freeing something more; and then nothing is left.
func TestEveryCloseRetriesWhatItCouldNotFree(t *testing.T) {
	for _, c := range closeCases() {
		t.Run(c.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t, c.fake...)
			closeIt, after := c.open(t, f)
			f.ResetCalls()
			require.NoError(t, closeIt())
			calls := f.Calls()
			require.NoError(t, after())
			require.NotEmpty(t, calls)
			for i, call := range calls {
				t.Run(fmt.Sprintf("%d_%s", i+1, call), func(t *testing.T) {
					f := cudarttest.NewFakeT(t, c.fake...)
					closeIt, after := c.open(t, f)
					f.ResetCalls()
					require.NoError(t, f.FailNth(i+1, faultCode))
					err := closeIt()
					f.ClearFaults()
					require.Equal(t, call, f.Calls()[i], "the calls of Close changed since the probe")
					var ce *cudart.Error
					require.ErrorAs(t, err, &ce, "the failure reaches the caller")
					assert.Equal(t, faultCode, ce.Code)
					for tries := 1; err != nil; tries++ {
						require.Less(t, tries, len(calls), "Close keeps failing: %v", err)
						err = closeIt()
					}
					require.NoError(t, closeIt())
					require.NoError(t, after())
					require.True(t, f.Live().Empty(), "Close returned nil, yet: %v", f.CheckLeaks())
				})
			}
		})
	}
}
