package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

func (s *suite) testDeviceInfo(t *testing.T) {
	count, err := s.rt.DeviceCount()
	require.NoError(t, err)
	assert.Positive(t, count)
	free, total, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	assert.Positive(t, total)
	assert.LessOrEqual(t, free, total)
}

// testMallocGranularity runs before anything else is allocated, so that
// cudaMalloc(1) takes a page of its own: CUDA takes device memory in 2 MiB
// pages.
func (s *suite) testMallocGranularity(t *testing.T) {
	const page = 2 * mib
	before, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	s.malloc(t, 1)
	after, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	require.Greater(t, before, after, "cudaMalloc(1) takes device memory")
	drop := before - after
	assert.Zero(t, drop%page, "cudaMalloc(1) took %d B, not a multiple of 2 MiB", drop)
}

func (s *suite) testMallocFree(t *testing.T) {
	t.Run("AlignedAndDistinct", func(t *testing.T) {
		sizes := []uint64{1, 255, 256, 257, 4 * kib, mib + 1}
		type alloc struct {
			p cudart.DevicePtr
			n uint64
		}
		var got []alloc
		for _, n := range sizes {
			p := s.malloc(t, n)
			assert.True(t, align.Is(uint64(p), align.CUDA), "cudaMalloc(%d) = %s, not 256-byte aligned", n, p)
			got = append(got, alloc{p, n})
		}
		for i, a := range got {
			for _, b := range got[i+1:] {
				overlap := a.p < b.p.Add(b.n) && b.p < a.p.Add(a.n)
				assert.False(t, overlap, "%s[%d] overlaps %s[%d]", a.p, a.n, b.p, b.n)
			}
		}
	})
	t.Run("FreeMemoryDropsAndReturns", func(t *testing.T) {
		// CUDA rounds allocations up to pages and other processes may
		// allocate too, so the drop is checked against half the size only.
		const n = 64 * mib
		before, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		p, err := s.rt.Malloc(s.dev, n)
		require.NoError(t, err)
		freeNow := once(t, calls.Free, func() error { return s.rt.Free(s.dev, p) })
		during, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		assert.LessOrEqual(t, during+n/2, before, "free memory should drop by about %d MiB", n/mib)
		freeNow()
		after, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, after, during+n/2, "free memory should come back")
	})
	t.Run("FreeZeroIsNoop", func(t *testing.T) {
		assert.NoError(t, s.rt.Free(s.dev, 0))
	})
}

func (s *suite) testMemcpy(t *testing.T) {
	const n = 64*kib + 3
	kinds := []struct {
		name               string
		h2d, d2d, d2h, h2h cudart.MemcpyKind
	}{
		{"Explicit", cudart.HostToDevice, cudart.DeviceToDevice, cudart.DeviceToHost, cudart.HostToHost},
		{"Default", cudart.Default, cudart.Default, cudart.Default, cudart.Default},
	}
	for i, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			src := pattern(uint64(i+1), n)
			a, b := s.malloc(t, n), s.malloc(t, n)
			require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(a, n), cudart.HostMem(src), k.h2d), "host to device")
			require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(b, n), cudart.DeviceMem(a, n), k.d2d), "device to device")
			out := make([]byte, n)
			require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(out), cudart.DeviceMem(b, n), k.d2h), "device to host")
			assert.True(t, bytes.Equal(src, out), "bytes differ after host -> device -> device -> host")

			hh := make([]byte, n)
			require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(hh), cudart.HostMem(src), k.h2h), "host to host")
			assert.True(t, bytes.Equal(src, hh), "bytes differ after host -> host")
		})
	}
	t.Run("Window", func(t *testing.T) {
		const size, off, w = 4 * kib, 256, 1000
		p := s.malloc(t, size)
		base := pattern(10, size)
		s.write(t, p, base)
		win := pattern(11, w)
		require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(p.Add(off), w), cudart.HostMem(win), cudart.HostToDevice))
		got := s.read(t, p, size)
		want := append(append(append([]byte{}, base[:off]...), win...), base[off+w:]...)
		assert.True(t, bytes.Equal(want, got), "a copy into [%d, %d) must change exactly those bytes", off, off+w)
	})
}

func (s *suite) testMemset(t *testing.T) {
	const n, off, w = 8*kib + 5, 100, 1000
	p := s.malloc(t, n)
	require.NoError(t, s.rt.Memset(s.dev, p, 0xab, n))
	require.NoError(t, s.rt.Memset(s.dev, p.Add(off), 0x00, w))
	require.NoError(t, s.rt.DeviceSynchronize(s.dev))
	got := s.read(t, p, n)
	assert.Equal(t, -1, filled(got[:off], 0xab), "before the window")
	assert.Equal(t, -1, filled(got[off:off+w], 0x00), "the window")
	assert.Equal(t, -1, filled(got[off+w:], 0xab), "after the window")
}

func (s *suite) testErrors(t *testing.T) {
	t.Run("HugeMallocIsOutOfMemory", func(t *testing.T) {
		p, err := s.rt.Malloc(s.dev, 1<<50)
		if err == nil {
			require.NoError(t, s.rt.Free(s.dev, p))
		}
		assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
		var ce *cudart.Error
		assert.ErrorAs(t, err, &ce)
	})
	t.Run("HugeMallocHostIsOutOfMemory", func(t *testing.T) {
		b, err := s.rt.MallocHost(s.dev, 1<<50)
		if err == nil {
			require.NoError(t, s.rt.FreeHost(b))
		}
		assert.ErrorIs(t, err, cudart.ErrMemoryAllocation, "pinning 1 PiB")
	})
	t.Run("InvalidDevice", func(t *testing.T) {
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		_, _, err = s.rt.MemGetInfo(count)
		assert.ErrorIs(t, err, cudart.ErrInvalidDevice, "cudaMemGetInfo on device %d of %d", count, count)
		p, err := s.rt.Malloc(count, 256)
		if err == nil {
			require.NoError(t, s.rt.Free(s.dev, p))
		}
		assert.ErrorIs(t, err, cudart.ErrInvalidDevice, "cudaMalloc on device %d of %d", count, count)
	})
}
