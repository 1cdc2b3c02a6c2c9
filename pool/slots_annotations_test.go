package pool_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// regionAt is the region registered at addr in any heap of f.
func regionAt(t *testing.T, f *cudarttest.Fake, addr cudart.DevicePtr) (cudart.MemRegion, bool) {
	t.Helper()
	for _, h := range f.MemHeaps() {
		rs, err := f.MemRegions(h)
		require.NoError(t, err)
		if i := slices.IndexFunc(rs, func(r cudart.MemRegion) bool { return r.Addr == addr }); i >= 0 {
			return rs[i], true
		}
	}
	return cudart.MemRegion{}, false
}

// A held slot's buffers are regions of their own, named after the buffer
// and the slot, laid out for the profile the slot was acquired with; the
// attachment's scratch is one too, from NewSlots on.
func TestAHeldSlotsBuffersAreRegionsNamedAfterThem(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	l := newServingLayout(t)
	layout := l.layout()
	c := newCounter(f, 4096)
	layout.Attach = []pool.Attachment{c}
	s, err := pool.NewSlots(f, 1, layout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	scratch := c.resources[0].scratch
	r, ok := regionAt(t, f, scratch)
	require.True(t, ok, "the scratch is a region before any Acquire")
	assert.Equal(t, cudart.MemRegion{Addr: scratch, Size: 4096, Name: "*pool_test.counter scratch (slot 0)"}, r)

	ctx := context.Background()
	for _, prof := range []string{"b1", "b8", "b8", "b1"} {
		sl, err := s.Acquire(ctx, prof)
		require.NoError(t, err)
		n := uint64(1)
		if prof == "b8" {
			n = 8
		}
		in := must(sl.Bytes(must(sl.Lookup("in"))))
		r, ok := regionAt(t, f, cudart.HostPtr(in))
		require.True(t, ok, "%s: in", prof)
		assert.Equal(t, cudart.MemRegion{Addr: cudart.HostPtr(in), Size: 1000 * n, Name: "in (slot 0)"}, r, prof)
		for _, name := range []string{"x", "h", "y"} {
			p := must(sl.Ptr(must(sl.Lookup(name))))
			r, ok := regionAt(t, f, p)
			require.True(t, ok, "%s: %s", prof, name)
			assert.Equal(t, 4096*n, r.Size, "%s: %s", prof, name)
			// x and y are never alive together: the planner may give them
			// the same bytes, and the region names both.
			assert.Contains(t, r.Name, name+" (slot 0)", prof)
		}
		r, ok = regionAt(t, f, scratch)
		require.True(t, ok, "%s: the scratch", prof)
		assert.Equal(t, uint64(4096), r.Size)
		require.NoError(t, s.Release(sl))
	}
}

// A copy that runs past one of a slot's buffers, into the next buffer or
// into the attachment's scratch, faults naming the buffer it ran past,
// where the whole slot had been one region.
func TestACopyPastASlotsBufferNamesTheBuffer(t *testing.T) {
	for _, c := range []struct {
		name       string
		into       string // the buffer written, or "scratch"
		bytes      uint64
		fault      string
		wantFaults bool
	}{
		{"into the next buffer", "a", 1024 + 1, `byte 0 past the end of "a (slot 0)" (1000 B)`, true},
		{"into the scratch", "b", 1024 + 1, `byte 0 past the end of "b (slot 0)" (1000 B)`, true},
		{"the whole scratch", "scratch", 4096, "", false},
		{"past the scratch", "scratch", 4096 + 1, `byte 0 past the end of "*pool_test.counter scratch (slot 0)" (4.0 KiB)`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			pr := pool.NewProfile("p")
			_, err := pr.Device(1000, pool.Name("a"))
			require.NoError(t, err)
			_, err = pr.Device(1000, pool.Name("b"))
			require.NoError(t, err)
			att := newCounter(f, 4096)
			// Two slots: slot 0's scratch is followed by slot 1's bytes.
			s, err := pool.NewSlots(f, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{att}})
			require.NoError(t, err)
			sl, err := s.Acquire(context.Background(), "p")
			require.NoError(t, err)
			require.Equal(t, 0, sl.Index())
			dst := att.resources[0].scratch
			if c.into != "scratch" {
				dst = must(sl.Ptr(must(sl.Lookup(c.into))))
			}
			err = f.MemcpyAsync(0, cudart.DeviceMem(dst, c.bytes), cudart.HostMem(make([]byte, c.bytes)), cudart.HostToDevice, must(sl.Stream()))
			if err == nil {
				err = f.StreamSynchronize(0, must(sl.Stream()))
			}
			if !c.wantFaults {
				require.NoError(t, err)
				require.NoError(t, s.Release(sl))
				require.NoError(t, s.Close())
				return
			}
			require.ErrorIs(t, err, cudart.ErrIllegalAddress)
			t.Log(err)
			assert.Contains(t, err.Error(), c.fault)
			// The fault is sticky: a reset ends it, and the slots' memory
			// and streams with it.
			require.NoError(t, f.DeviceReset(0))
			require.ErrorIs(t, s.Close(), pool.ErrDeviceReset)
		})
	}
}

// A slot's regions are its holder's profile's: a request of one profile
// that writes where another profile's buffer is, but none of its own, is
// caught.
func TestASlotsRegionsFollowItsProfile(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	small, large := pool.NewProfile("small"), pool.NewProfile("large")
	_, err := small.Device(256, pool.Name("s"))
	require.NoError(t, err)
	_, err = large.Device(8192, pool.Name("l"))
	require.NoError(t, err)
	s, err := pool.NewSlots(f, 1, pool.SlotLayout{Profiles: []*pool.Profile{small, large}})
	require.NoError(t, err)
	ctx := context.Background()
	sl, err := s.Acquire(ctx, "large")
	require.NoError(t, err)
	base := must(sl.Ptr(must(sl.Lookup("l"))))
	require.NoError(t, f.Memset(0, base, 1, 8192), "the whole of l")
	require.NoError(t, s.Release(sl))
	sl, err = s.Acquire(ctx, "small")
	require.NoError(t, err)
	require.Equal(t, base, must(sl.Ptr(must(sl.Lookup("s")))))
	err = f.Memset(0, base, 1, 8192)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress, "l's bytes past s, in a slot held for small")
	assert.Contains(t, err.Error(), fmt.Sprintf("past the end of %q (256 B)", "s (slot 0)"))
	require.NoError(t, f.DeviceReset(0))
	require.ErrorIs(t, s.Close(), pool.ErrDeviceReset)
}

// WithGuards is refused by NewSlots, saying why and what to use instead:
// a slot's profiles share its bytes.
func TestSlotsRefuseGuards(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, err := pool.NewSlots(f, 2, newServingLayout(t).layout(), pool.WithGuards(256))
	require.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), "WithGuards")
	assert.Contains(t, err.Error(), "memory tool")
	_, err = pool.NewMultiSlots(cudarttest.NewFakeT(t, cudarttest.WithDevices(2)), []int{0, 1}, 1, newServingLayout(t).layout(), pool.WithGuards(256))
	require.ErrorIs(t, err, pool.ErrInvalidOption)
}
