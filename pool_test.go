package cudapool_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// forEachRuntime runs fn as a subtest on the fake and, where CUDA loads and
// has a device, on real CUDA; the CUDA subtest skips with the loader's reason
// otherwise.
func forEachRuntime(t *testing.T, fn func(t *testing.T, rt cudart.Full), opts ...cudarttest.Option) {
	t.Run("fake", func(t *testing.T) {
		fn(t, cudarttest.NewFakeT(t, opts...))
	})
	t.Run("cuda", func(t *testing.T) {
		lib, err := cudart.Open()
		if err != nil {
			t.Skipf("no CUDA: %v", err)
		}
		t.Cleanup(func() { _ = lib.Close() })
		if n, err := lib.DeviceCount(); err != nil || n == 0 {
			t.Skipf("no CUDA device: count %d, %v", n, err)
		}
		if name, err := lib.DeviceName(0); err == nil {
			t.Logf("device 0: %s", name)
		}
		fn(t, lib)
	})
}

// memInfo is device 0's free and total memory.
func memInfo(t *testing.T, rt cudart.Runtime) (free, total uint64) {
	t.Helper()
	free, total, err := rt.MemGetInfo(0)
	require.NoError(t, err, "MemGetInfo")
	return free, total
}

type filled struct {
	b       *pool.Buffer
	pattern []byte
}

// fillRound places n buffers of mixed sizes in both arenas and writes a
// distinct pattern into each: host buffers directly, device buffers by H2D
// copy or by memset.
func fillRound(t *testing.T, rt cudart.Runtime, p *pool.Pool, r *rand.Rand, n int) []filled {
	t.Helper()
	out := make([]filled, 0, n)
	for i := 0; i < n; i++ {
		size := 1 + r.Uint64N(1<<uint(4+r.IntN(13))) // 1 B to 128 KiB
		name := pool.Name(fmt.Sprintf("buf%d", i))
		var b *pool.Buffer
		var err error
		if i%3 == 0 {
			b, err = p.WantHost(size, name)
		} else {
			b, err = p.WantDevice(size, name)
		}
		require.NoError(t, err)
		out = append(out, filled{b: b})
	}
	require.NoError(t, p.Satisfy())
	for i := range out {
		f := &out[i]
		f.pattern = make([]byte, f.b.Size())
		seed := byte(i*37 + 11)
		switch {
		case f.b.Arena() == pool.Host:
			for j := range f.pattern {
				f.pattern[j] = seed ^ byte(j)
			}
			hb, err := f.b.Bytes()
			require.NoError(t, err)
			copy(hb, f.pattern)
		case i%2 == 0:
			for j := range f.pattern {
				f.pattern[j] = seed + byte(j*7)
			}
			ptr, err := f.b.Ptr()
			require.NoError(t, err)
			require.NoError(t, rt.Memcpy(p.Device(), cudart.DeviceMem(ptr, f.b.Size()), cudart.HostMem(f.pattern), cudart.HostToDevice))
		default:
			for j := range f.pattern {
				f.pattern[j] = seed
			}
			ptr, err := f.b.Ptr()
			require.NoError(t, err)
			require.NoError(t, rt.Memset(p.Device(), ptr, seed, f.b.Size()))
		}
	}
	return out
}

// verify reads every buffer back (device buffers by D2H copy) and compares
// it with its pattern: any overlap shows as corruption.
func verify(t *testing.T, rt cudart.Runtime, p *pool.Pool, bufs []filled) {
	t.Helper()
	require.NoError(t, rt.DeviceSynchronize(p.Device()))
	bad := 0
	for _, f := range bufs {
		if !bytes.Equal(pooltest.Read(t, rt, f.b), f.pattern) {
			bad++
			if bad <= 5 {
				t.Errorf("%s (%s arena, offset %d, %d bytes) was corrupted", f.b.Name(), f.b.Arena(), f.b.Offset(), f.b.Size())
			}
		}
	}
	require.Zero(t, bad, "corrupted buffers")
}

// TestEndToEnd places a few thousand buffers of mixed sizes in both arenas,
// writes a distinct pattern into each, reads every one back, releases,
// places again, closes, and checks the device's free memory is back where it
// started.
func TestEndToEnd(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		free0, total := memInfo(t, rt)
		p, err := pool.New(rt, pool.WithDeviceBytes(512<<20), pool.WithHostBytes(256<<20))
		require.NoError(t, err)
		during, _ := memInfo(t, rt)
		assert.GreaterOrEqual(t, free0-during, uint64(512<<20), "the device arena is taken from the device")

		r := rand.New(rand.NewPCG(42, 1))
		for round := 0; round < 2; round++ {
			bufs := fillRound(t, rt, p, r, 3000)
			verify(t, rt, p, bufs)
			st := p.Stats()
			t.Logf("round %d: %d device buffers in %s, %d host buffers in %s", round,
				st.Device.Placed, bytesize.Format(st.Device.Used), st.Host.Placed, bytesize.Format(st.Host.Used))
			require.NoError(t, p.ReleaseAll())
			_, err := bufs[0].b.Ptr()
			require.ErrorIs(t, err, pool.ErrReleased)
		}
		require.NoError(t, p.Close())
		free1, _ := memInfo(t, rt)
		t.Logf("free device memory: %s before New, %s after Close (of %s)",
			bytesize.Format(free0), bytesize.Format(free1), bytesize.Format(total))
		assert.InDelta(t, float64(free0), float64(free1), 2<<20, "free memory back where it started")
	})
}

// TestExhaustionOnTheDevice asks for more than the arena holds: a typed error,
// nothing placed, and the pool still usable.
func TestExhaustionOnTheDevice(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		p := pooltest.New(t, rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
		for i := 0; i < 3; i++ {
			pooltest.Device(t, p, 30<<20, pool.Name(fmt.Sprintf("slab%d", i)))
		}
		err := p.Satisfy()
		require.ErrorIs(t, err, pool.ErrExhausted)
		t.Log(err)
		require.NoError(t, p.ReleaseAll())
		b := pooltest.Device(t, p, 30<<20)
		require.NoError(t, p.Commit())
		require.NoError(t, rt.Memset(p.Device(), pooltest.Ptr(t, b), 1, b.Size()))
	})
}

// TestGrowableEndToEnd runs the same placement on a growable arena: memory is
// mapped as Satisfy needs it, every buffer keeps its bytes across growths,
// and Close gives everything back.
func TestGrowableEndToEnd(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		free0, _ := memInfo(t, rt)
		p, err := pool.New(rt, pool.WithGrowableDevice(8<<30), pool.WithHostBytes(64<<20))
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(7, 7))
		var all []filled
		for batch := 0; batch < 4; batch++ {
			all = append(all, fillRound(t, rt, p, r, 500)...)
			verify(t, rt, p, all)
		}
		st := p.Stats().Device
		t.Logf("growable arena: %s used, %s mapped, %s reserved", bytesize.Format(st.Used), bytesize.Format(st.Mapped), bytesize.Format(st.Capacity))
		assert.GreaterOrEqual(t, st.Mapped, st.Used)
		assert.Less(t, st.Mapped, st.Capacity/100, "only what the buffers need is mapped")
		require.NoError(t, p.Close())
		free1, _ := memInfo(t, rt)
		assert.InDelta(t, float64(free0), float64(free1), 2<<20, "free memory back where it started")
	})
}

// TestTwoGPUs puts one pool on each of two devices, grants each arena to the
// other GPU, and moves data between them: a copy from GPU 0's arena to GPU
// 1's, and a memset by GPU 1 straight into GPU 0's arena.
func TestTwoGPUs(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		if n, err := rt.DeviceCount(); err != nil || n < 2 {
			t.Skipf("needs 2 devices, have %d (%v)", n, err)
		}
		const size = 8 << 20
		var pools [2]*pool.Pool
		var ptrs [2]cudart.DevicePtr
		for d := range pools {
			p := pooltest.New(t, rt, pool.WithDevice(d), pool.WithGrowableDevice(1<<30), pool.WithHostBytes(0), pool.WithPeerAccess(1-d))
			b := pooltest.Device(t, p, size, pool.Name(fmt.Sprintf("gpu%d", d)))
			require.NoError(t, p.Commit())
			ptrs[d] = pooltest.Ptr(t, b)
			pools[d] = p
		}
		pattern := make([]byte, size)
		for i := range pattern {
			pattern[i] = byte(i * 13)
		}
		require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(ptrs[0], size), cudart.HostMem(pattern), cudart.HostToDevice))
		require.NoError(t, rt.Memcpy(1, cudart.DeviceMem(ptrs[1], size), cudart.DeviceMem(ptrs[0], size), cudart.DeviceToDevice))
		got := make([]byte, size)
		require.NoError(t, rt.Memcpy(1, cudart.HostMem(got), cudart.DeviceMem(ptrs[1], size), cudart.DeviceToHost))
		require.Equal(t, pattern, got, "GPU 0 -> GPU 1")

		require.NoError(t, rt.Memset(1, ptrs[0], 0x5a, size), "GPU 1 writes GPU 0's arena through peer access")
		require.NoError(t, rt.DeviceSynchronize(1))
		require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(ptrs[0], size), cudart.DeviceToHost))
		require.Equal(t, bytes.Repeat([]byte{0x5a}, size), got)
	}, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
}
