package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// newCheckedPool is a pool on a fake that enforces the annotations.
func newCheckedPool(t *testing.T, opts ...pool.Option) (*pool.Pool, *cudarttest.Fake) {
	t.Helper()
	f := cudarttest.NewFakeT(t)
	p, err := pool.New(f, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, f
}

// regionsOf is what is registered in the heap of the arena at base.
func regionsOf(t *testing.T, f *cudarttest.Fake, base cudart.DevicePtr) []cudart.MemRegion {
	t.Helper()
	h, ok := f.MemHeaps()[base]
	require.True(t, ok, "no heap at %s among %v", base, f.MemHeaps())
	rs, err := f.MemRegions(h)
	require.NoError(t, err)
	return rs
}

func ptrOf(t *testing.T, b *pool.Buffer) cudart.DevicePtr {
	t.Helper()
	p, err := b.Ptr()
	require.NoError(t, err)
	return p
}

// TestAnnotationsFollowTheBuffers: every arena kind is a heap from New to
// Close, and its buffers are regions from Satisfy to ReleaseAll.
func TestAnnotationsFollowTheBuffers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  []pool.Option
		arena pool.Arena
	}{
		{"fixed", []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(0)}, pool.Device},
		{"managed", []pool.Option{pool.WithDeviceBytes(0), pool.WithHostBytes(0), pool.WithManagedBytes(mib)}, pool.Managed},
		{"host", []pool.Option{pool.WithDeviceBytes(0), pool.WithHostBytes(mib), pool.WithHostFlags(pinned.Mapped)}, pool.Host},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, f := newCheckedPool(t, tt.opts...)
			want := func(size uint64, name string) *pool.Buffer {
				var b *pool.Buffer
				var err error
				switch tt.arena {
				case pool.Device:
					b, err = p.WantDevice(size, pool.Name(name))
				case pool.Host:
					b, err = p.WantHost(size, pool.Name(name))
				default:
					b, err = p.WantManaged(size, pool.Name(name))
				}
				require.NoError(t, err)
				return b
			}
			a, b := want(1000, "a"), want(4096, "")
			require.NoError(t, p.Satisfy())
			require.Len(t, f.MemHeaps(), 1)
			pa, pb := ptrOf(t, a), ptrOf(t, b)
			base := pa - cudart.DevicePtr(a.Offset())
			if tt.arena == pool.Host {
				bytes, err := a.Bytes()
				require.NoError(t, err)
				base = cudart.HostPtr(bytes) - cudart.DevicePtr(a.Offset())
			}
			assert.Equal(t, []cudart.MemRegion{
				{Addr: base.Add(a.Offset()), Size: 1000, Name: "a"},
				{Addr: base.Add(b.Offset()), Size: 4096, Name: "unnamed request of 4096 B"},
			}, regionsOf(t, f, base))

			assert.NoError(t, f.Memset(0, pa, 1, 1000))
			err := f.Memset(0, pa, 1, 1001)
			require.ErrorIs(t, err, cudart.ErrIllegalAddress, "one byte past the buffer")
			assert.ErrorContains(t, err, `byte 0 past the end of "a" (1000 B)`)
			assert.NoError(t, f.Memset(0, pb, 1, 4096))

			require.NoError(t, p.ReleaseAll())
			assert.Empty(t, regionsOf(t, f, base))
			assert.ErrorIs(t, f.Memset(0, pa, 1, 1), cudart.ErrIllegalAddress, "use after ReleaseAll")
		})
	}
}

// TestStepRegistersOnlyTheLiving: with lifetimes, Step leaves registered only
// the buffers alive at the step, so an access outside a buffer's Live range
// is caught; before the first Step, buffers sharing an offset are one region.
func TestStepRegistersOnlyTheLiving(t *testing.T) {
	p, f := newCheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	early, err := p.WantDevice(4096, pool.Name("early"), pool.Live(0, 1))
	require.NoError(t, err)
	late, err := p.WantDevice(8192, pool.Name("late"), pool.Live(2, 3))
	require.NoError(t, err)
	always, err := p.WantDevice(256, pool.Name("always"))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	require.Equal(t, early.Offset(), late.Offset(), "the planner shares the bytes of buffers never alive together")
	pe, pl, pa := ptrOf(t, early), ptrOf(t, late), ptrOf(t, always)
	base := pe - cudart.DevicePtr(early.Offset())

	names := func() []string {
		var out []string
		for _, r := range regionsOf(t, f, base) {
			out = append(out, r.Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"early | late", "always"}, names(), "before Step the pool cannot tell which is in use")

	require.NoError(t, p.Step(0))
	assert.ElementsMatch(t, []string{"early", "always"}, names())
	assert.NoError(t, f.Memset(0, pe, 1, 4096))
	err = f.Memset(0, pl, 1, 8192)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress, "late is not alive at step 0")
	assert.ErrorContains(t, err, `byte 0 past the end of "early" (4.0 KiB)`)

	require.NoError(t, p.Step(2))
	assert.ElementsMatch(t, []string{"late", "always"}, names())
	assert.NoError(t, f.Memset(0, pl, 1, 8192))
	assert.NoError(t, f.Memset(0, pa, 1, 256), "a buffer without Live is alive at every step")

	require.NoError(t, p.Step(4))
	assert.ElementsMatch(t, []string{"always"}, names())
	require.NoError(t, p.Step(0), "the next request starts again at 0")
	assert.ElementsMatch(t, []string{"early", "always"}, names())
	require.NoError(t, f.DeviceSynchronize(0))
}

func TestStepMisuse(t *testing.T) {
	p, _ := newCheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	assert.ErrorIs(t, p.Step(0), pool.ErrNotPlaced, "before Satisfy")
	_, err := p.WantDevice(256, pool.Live(0, 3))
	require.NoError(t, err)
	assert.ErrorIs(t, p.Step(0), pool.ErrNotPlaced, "queued is not placed")
	require.NoError(t, p.Satisfy())
	for _, s := range []int{-1, pool.MaxStep + 1} {
		err := p.Step(s)
		assert.ErrorIs(t, err, pool.ErrInvalidRequest, "Step(%d)", s)
		assert.ErrorContains(t, err, "want a step from 0 to MaxStep")
	}
	require.NoError(t, p.Step(pool.MaxStep), "the last step is a step")
	require.NoError(t, p.Step(1), "usable after refusals")
	require.NoError(t, p.ReleaseAll())
	assert.ErrorIs(t, p.Step(1), pool.ErrNotPlaced, "ReleaseAll placed nothing")

	var nilPool *pool.Pool
	assert.ErrorIs(t, nilPool.Step(0), pool.ErrClosed)
	assert.ErrorIs(t, (&pool.Pool{}).Step(0), pool.ErrClosed)
	closed, err := pool.New(cudarttest.NewFakeT(t), pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	assert.ErrorIs(t, closed.Step(0), pool.ErrClosed)
}

// TestStepPoisonsEndedBuffers: with guards, Step fills a buffer whose life
// ended with ReleasedPoison, but never bytes a living buffer holds, and the
// guards stay intact. (Without memcheck, which would refuse the test's own
// read of a dead buffer.)
func TestStepPoisonsEndedBuffers(t *testing.T) {
	p, f, early, late := newSharingPair(t, "early", 8192, "late", 4096)
	pe, pl := ptrOf(t, early), ptrOf(t, late)
	read := func(ptr cudart.DevicePtr, n int) []byte {
		out := make([]byte, n)
		require.NoError(t, f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(ptr, uint64(n)), cudart.DeviceToHost))
		return out
	}
	require.NoError(t, p.Step(0))
	require.NoError(t, f.Memset(0, pe, 0x11, 8192))
	require.NoError(t, p.Step(1))
	assert.Equal(t, byte(0x11), read(pe, 8192)[8191], "alive through step 1")

	require.NoError(t, p.Step(2))
	require.NoError(t, f.Memset(0, pl, 0x22, 4096))
	require.NoError(t, p.Step(3))
	got := read(pl, 4096)
	assert.Equal(t, byte(0x22), got[0], "late's bytes were not poisoned while it lives")
	require.NoError(t, p.Check(), "poison never touches a guard")

	require.NoError(t, p.Step(4))
	assert.Equal(t, pool.ReleasedPoison, read(pl, 4096)[4095], "late ended at 3")
}

// TestGuardsUnderMemcheck: the pool's own guard fills, checks and poisoning
// are not reported as the program's bugs.
func TestGuardsUnderMemcheck(t *testing.T) {
	p, f := newCheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithGuards(512))
	b, err := p.WantDevice(1000, pool.Name("victim"))
	require.NoError(t, err)
	_, err = p.WantHost(100)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	require.NoError(t, p.Check())
	err = f.Memset(0, ptrOf(t, b).Add(1000), 0x42, 1)
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress, "memcheck catches the overflow before it lands")
	require.NoError(t, p.ReleaseAll())
	require.NoError(t, f.DeviceSynchronize(0))
}

// TestGrowableIsNotAnnotated: compute-sanitizer refuses heaps over virtual
// memory mappings, so the pool registers none for a growable arena.
func TestGrowableIsNotAnnotated(t *testing.T) {
	p, f := newCheckedPool(t, pool.WithGrowableDevice(8*mib), pool.WithHostBytes(0))
	b, err := p.WantDevice(1000)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.Empty(t, f.MemHeaps())
	assert.NoError(t, f.Memset(0, ptrOf(t, b), 1, 1001), "unannotated memory is not checked")
}
