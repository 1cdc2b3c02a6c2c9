package cudarttest_test

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

func mustMalloc(t *testing.T, f *cudarttest.Fake, n uint64) cudart.DevicePtr {
	t.Helper()
	p, err := f.Malloc(0, n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Free(0, p) })
	return p
}

func TestMallocZeroIsNilAndNoError(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := f.Malloc(0, 0)
	require.NoError(t, err)
	assert.Zero(t, p)
	assert.True(t, f.Live().Empty())
}

// TestMallocPlacesAlignedSeparateNeverReusedRanges is a property test: over
// random sizes and frees, every live allocation is 256-byte aligned, no two
// touch (a guard gap lies between), and no address is handed out twice.
func TestMallocPlacesAlignedSeparateNeverReusedRanges(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	r := rand.New(rand.NewPCG(1, 2))
	type alloc struct {
		p cudart.DevicePtr
		n uint64
	}
	var live []alloc
	seen := map[cudart.DevicePtr]bool{}
	for range 1000 {
		if len(live) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(live))
			require.NoError(t, f.Free(0, live[i].p))
			live = append(live[:i], live[i+1:]...)
			continue
		}
		n := 1 + r.Uint64N(3*64*kib)
		p, err := f.Malloc(0, n)
		require.NoError(t, err)
		require.True(t, align.Is(uint64(p), align.CUDA), "%s not aligned", p)
		require.False(t, seen[p], "address %s handed out twice", p)
		seen[p] = true
		for _, a := range live {
			require.False(t, p <= a.p.Add(a.n) && a.p <= p.Add(n), "%s[%d] touches %s[%d]", p, n, a.p, a.n)
		}
		live = append(live, alloc{p, n})
	}
	assert.Equal(t, len(live), f.Live().DeviceAllocs)
	for _, a := range live {
		require.NoError(t, f.Free(0, a.p))
	}
}

func TestMemGetInfoCountsEveryKind(t *testing.T) {
	tests := []struct {
		name   string
		charge uint64
		alloc  func(f *cudarttest.Fake) (free func() error, err error)
	}{
		{"Malloc opens a 2 MiB chunk", 2 * mib, func(f *cudarttest.Fake) (func() error, error) {
			p, err := f.Malloc(0, 300)
			return func() error { return f.Free(0, p) }, err
		}},
		{"MallocManaged", 2 * mib, func(f *cudarttest.Fake) (func() error, error) {
			p, err := f.MallocManaged(0, mib, cudart.MemAttachGlobal)
			return func() error { return f.Free(0, p) }, err
		}},
		{"MallocAsync opens a 32 MiB segment", 32 * mib, func(f *cudarttest.Fake) (func() error, error) {
			p, err := f.MallocAsync(0, mib, 0)
			return func() error {
				if err := f.FreeAsync(0, p, 0); err != nil {
					return err
				}
				return f.StreamSynchronize(0, 0) // the free is stream-ordered
			}, err
		}},
		{"MemCreate", 2 * g, func(f *cudarttest.Fake) (func() error, error) {
			h, err := f.MemCreate(0, 2*g)
			return func() error { return f.MemRelease(h) }, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(64*mib))
			free0, total, err := f.MemGetInfo(0)
			require.NoError(t, err)
			require.Equal(t, uint64(64*mib), total)
			require.Equal(t, total, free0)
			release, err := tt.alloc(f)
			require.NoError(t, err)
			free1, _, err := f.MemGetInfo(0)
			require.NoError(t, err)
			assert.Equal(t, tt.charge, free0-free1)
			require.NoError(t, release())
			free2, _, err := f.MemGetInfo(0)
			require.NoError(t, err)
			assert.Equal(t, free0, free2)
		})
	}
}

func TestCapacityIsPerDevice(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2), cudarttest.WithDeviceMemory(4*mib))
	p, err := f.Malloc(0, 4*mib)
	require.NoError(t, err)
	_, err = f.Malloc(0, 1)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.ErrorContains(t, err, "cudaMalloc(1 B)")
	assert.ErrorContains(t, err, "0 B free of 4.0 MiB")
	q, err := f.Malloc(1, 4*mib)
	require.NoError(t, err, "device 1 has its own memory")
	require.NoError(t, f.Free(0, p))
	require.NoError(t, f.Free(1, q))
}

func TestLargeAllocationsCostNothingUntilTouched(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p := mustMalloc(t, f, 64*gib)
	end := p.Add(64*gib - 1)
	require.NoError(t, f.Memset(0, end, 7, 1))
	b := make([]byte, 4)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(end-3, 4), cudart.DeviceToHost))
	assert.Equal(t, []byte{0, 0, 0, 7}, b, "untouched bytes read as zeros")

	h, err := f.MallocHost(0, 8*gib)
	require.NoError(t, err)
	h[8*gib-1] = 1
	assert.Equal(t, byte(0), h[4*gib], "fresh pinned memory reads as zeros")
	require.NoError(t, f.FreeHost(h))
}

func TestCopiesAreBoundsChecked(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	const n = 1000
	p := mustMalloc(t, f, n)
	q := mustMalloc(t, f, n)
	want := bytes.Repeat([]byte{9}, n)
	require.NoError(t, f.Memcpy(0, cudart.DeviceMem(p, n), cudart.HostMem(want), cudart.HostToDevice))
	freed, err := f.Malloc(0, n)
	require.NoError(t, err)
	require.NoError(t, f.Free(0, freed))

	tests := []struct {
		name string
		call func() error
		msg  string
	}{
		{"one byte past the end", func() error {
			return f.Memcpy(0, cudart.DeviceMem(p, n+1), cudart.HostMem(make([]byte, n+1)), cudart.HostToDevice)
		}, "runs 1 B past the end"},
		{"from an offset past the end", func() error {
			return f.Memcpy(0, cudart.HostMem(make([]byte, 2)), cudart.DeviceMem(p.Add(n-1), 2), cudart.DeviceToHost)
		}, "runs 1 B past the end"},
		{"in the guard gap", func() error {
			return f.Memset(0, p.Add(n+8), 1, 1)
		}, "past the end of device memory"},
		{"freed memory", func() error {
			return f.Memset(0, freed, 1, 1)
		}, "was freed"},
		{"nowhere", func() error {
			return f.Memset(0, 0x1234, 1, 1)
		}, "in no live device allocation"},
		{"device to device past the end", func() error {
			return f.Memcpy(0, cudart.DeviceMem(q, n), cudart.DeviceMem(p.Add(1), n), cudart.DeviceToDevice)
		}, "runs 1 B past the end"},
		{"overlapping device ranges", func() error {
			return f.Memcpy(0, cudart.DeviceMem(p.Add(8), 16), cudart.DeviceMem(p, 16), cudart.DeviceToDevice)
		}, "overlap"},
		{"memset past the end", func() error {
			return f.Memset(0, p, 1, n+1)
		}, "runs 1 B past the end"},
		{"lengths differ", func() error {
			return f.Memcpy(0, cudart.DeviceMem(p, n), cudart.HostMem(make([]byte, n-1)), cudart.HostToDevice)
		}, "lengths must match"},
		{"kind contradicts the ends", func() error {
			return f.Memcpy(0, cudart.DeviceMem(q, n), cudart.DeviceMem(p, n), cudart.HostToDevice)
		}, "is cudaMemcpyDeviceToDevice, not cudaMemcpyHostToDevice"},
		{"unknown kind", func() error {
			return f.Memcpy(0, cudart.DeviceMem(q, n), cudart.DeviceMem(p, n), 9)
		}, "unknown copy kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, cudart.ErrInvalidValue)
			assert.ErrorContains(t, err, tt.msg)
			got := make([]byte, n)
			require.NoError(t, f.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, n), cudart.DeviceToHost))
			assert.Equal(t, want, got, "a failed copy wrote nothing")
		})
	}
}

func TestWrongFreeIsRejected(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	dev := mustMalloc(t, f, 4*kib)
	freed, err := f.Malloc(0, 256)
	require.NoError(t, err)
	require.NoError(t, f.Free(0, freed))
	mapped, err := f.HostAlloc(0, 4*kib, cudart.HostAllocMapped)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(mapped)) })
	alias, err := f.HostGetDevicePointer(0, mapped)
	require.NoError(t, err)
	va, err := f.MemAddressReserve(2*mib, 0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.MemAddressFree(va, 2*mib)) })
	reg := make([]byte, 8*kib)
	require.NoError(t, f.HostRegister(0, reg, cudart.HostRegisterDefault))
	t.Cleanup(func() { assert.NoError(t, f.HostUnregister(0, reg)) })

	tests := []struct {
		name string
		call func() error
		msg  string
	}{
		{"double free", func() error { return f.Free(0, freed) }, "already freed"},
		{"never allocated", func() error { return f.Free(0, 0x4000) }, "never allocated"},
		{"interior pointer", func() error { return f.Free(0, dev.Add(256)) }, "256 B inside"},
		{"mapped host memory", func() error { return f.Free(0, alias) }, "cudaFreeHost"},
		{"a reservation", func() error { return f.Free(0, va) }, "cuMemAddressFree"},
		{"cudaFreeAsync of cudaMalloc memory", func() error { return f.FreeAsync(0, dev, 0) }, "free it with cudaFree"},
		{"FreeHost of registered memory", func() error { return f.FreeHost(reg) }, "cudaHostUnregister"},
		{"FreeHost inside", func() error { return f.FreeHost(mapped[16:]) }, "16 B inside"},
		{"FreeHost of Go memory", func() error { return f.FreeHost(make([]byte, 1)) }, "not pinned host memory"},
	}
	before := f.Live()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, cudart.ErrInvalidValue)
			assert.ErrorContains(t, err, tt.msg)
			assert.Equal(t, before, f.Live(), "a rejected free frees nothing")
		})
	}
}

// TestConcurrentUse runs many goroutines through the hot calls; run it with
// -race.
func TestConcurrentUse(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range 50 {
				n := 1 + r.Uint64N(8*kib)
				p, err := f.Malloc(0, n)
				if !assert.NoError(t, err) {
					return
				}
				in := make([]byte, n)
				for i := range in {
					in[i] = byte(r.Uint32())
				}
				out := make([]byte, n)
				assert.NoError(t, f.Memcpy(0, cudart.DeviceMem(p, n), cudart.HostMem(in), cudart.HostToDevice))
				assert.NoError(t, f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, n), cudart.DeviceToHost))
				assert.True(t, bytes.Equal(in, out), "round trip changed the bytes")
				h, err := f.MallocHost(0, 4*kib)
				assert.NoError(t, err)
				assert.NoError(t, f.FreeHost(h))
				assert.NoError(t, f.Free(0, p))
			}
		}()
	}
	wg.Wait()
	assert.True(t, f.Live().Empty())
}

// TestMallocSharesChunks: small allocations share 2 MiB chunks, first fit,
// a freed range is reused, a chunk comes back with its last allocation, and
// an allocation that cannot get a chunk charges nothing.
func TestMallocSharesChunks(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(4*mib))
	used := func() uint64 {
		free, total, err := f.MemGetInfo(0)
		require.NoError(t, err)
		return total - free
	}
	a := mustMalloc(t, f, mib)
	b := mustMalloc(t, f, mib-511)
	assert.Equal(t, uint64(2*mib), used(), "1 MiB and 1 MiB-511 B share a chunk")
	c := mustMalloc(t, f, 1)
	assert.Equal(t, uint64(4*mib), used(), "1 MiB-511 B takes 1 MiB in 512 B units: one byte takes a second chunk")
	_, err := f.Malloc(0, 2*mib)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Equal(t, uint64(4*mib), used(), "the refused cudaMalloc charged nothing")
	require.NoError(t, f.Free(0, a))
	a = mustMalloc(t, f, mib)
	assert.Equal(t, uint64(4*mib), used(), "the freed MiB is reused")
	require.NoError(t, f.Free(0, c))
	assert.Equal(t, uint64(2*mib), used(), "the second chunk went back with its last allocation")
	require.NoError(t, f.Free(0, a))
	require.NoError(t, f.Free(0, b))
	assert.Zero(t, used())
}
