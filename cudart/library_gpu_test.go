package cudart

import (
	"math/bits"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file run against real CUDA on device 0 and skip, with
// Open's message, where it cannot be loaded or has no device. Sizes are a few
// MiB. They share one Library, never closed: unloading the runtime between tests
// would tear CUDA down and start it again.

var gpuLib struct {
	once sync.Once
	lib  *library
	skip string
}

func gpu(t testing.TB) *library {
	t.Helper()
	gpuLib.once.Do(func() {
		l, err := Open()
		if err != nil {
			gpuLib.skip = "CUDA not available: " + err.Error()
			return
		}
		n, err := l.DeviceCount()
		if err != nil || n == 0 {
			gpuLib.skip = "no CUDA device: " + l.Path()
			if err != nil {
				gpuLib.skip += ": " + err.Error()
			}
			_ = l.Close()
			return
		}
		gpuLib.lib = l.(*library)
	})
	if gpuLib.lib == nil {
		t.Skip(gpuLib.skip)
	}
	return gpuLib.lib
}

// pattern is n bytes that differ from their neighbours and from another seed's.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// gpuDriver is gpu for tests that need libcuda.
func gpuDriver(t testing.TB) *library {
	l := gpu(t)
	if l.DriverPath() == "" {
		_, err := l.MemGetAllocationGranularity(0, false)
		t.Skip(err)
	}
	return l
}

func TestGPUInfo(t *testing.T) {
	l := gpu(t)
	rv, err := l.RuntimeVersion()
	require.NoError(t, err)
	dv, err := l.DriverVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rv, 12000)
	assert.GreaterOrEqual(t, dv, rv, "the driver supports the runtime")
	free, total, err := l.MemGetInfo(0)
	require.NoError(t, err)
	assert.LessOrEqual(t, free, total)
	assert.NotZero(t, total)
	name := "(no driver library)"
	if l.DriverPath() != "" {
		name, err = l.DeviceName(0)
		require.NoError(t, err)
		assert.NotEmpty(t, name)
	}
	t.Logf("runtime %s (%d), driver %s (%d), device 0 %q, %d of %d bytes free", l.Path(), rv, l.DriverPath(), dv, name, free, total)
}

func TestGPUDeviceMemory(t *testing.T) {
	l := gpu(t)
	const n = 1 << 20
	a, err := l.Malloc(0, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, a)) }()
	b, err := l.Malloc(0, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, b)) }()
	assert.Zero(t, a%256)
	assert.Zero(t, b%256)

	src := pattern(n, 9)
	got := make([]byte, n)
	require.NoError(t, l.Memcpy(0, DeviceMem(a, n), HostMem(src), HostToDevice))
	require.NoError(t, l.Memcpy(0, DeviceMem(b, n), DeviceMem(a, n), DeviceToDevice))
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(b, n), DeviceToHost))
	assert.Equal(t, src, got)
	require.NoError(t, l.Memset(0, b.Add(100), 0xab, 50))
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(b, n), Default))
	want := append([]byte(nil), src...)
	for i := 100; i < 150; i++ {
		want[i] = 0xab
	}
	assert.Equal(t, want, got)
	h2h := make([]byte, n)
	require.NoError(t, l.Memcpy(0, HostMem(h2h), HostMem(got), HostToHost))
	assert.Equal(t, want, h2h)
	require.NoError(t, l.DeviceSynchronize(0))

	assert.ErrorIs(t, l.Memcpy(0, HostMem(got[:10]), DeviceMem(a, n), DeviceToHost), ErrInvalidValue)
}

func TestGPUErrors(t *testing.T) {
	l := gpu(t)
	_, err := l.Malloc(0, 1<<50)
	assert.ErrorIs(t, err, ErrMemoryAllocation, "1 PiB")
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cudaErrorMemoryAllocation", ce.Name, "named by CUDA")
	assert.Equal(t, "cudaMalloc(1.0 PiB) on device 0", ce.Call)

	n, err := l.DeviceCount()
	require.NoError(t, err)
	_, err = l.Malloc(n, 64)
	assert.ErrorIs(t, err, ErrInvalidDevice)

	p, err := l.Malloc(0, 64)
	require.NoError(t, err)
	require.NoError(t, l.Free(0, p))
	err = l.Free(0, p)
	require.Error(t, err, "double free")
	require.ErrorAs(t, err, &ce)
	t.Logf("double free: %v", err)
}

func TestGPUStreams(t *testing.T) {
	l := gpu(t)
	const n = 64 << 10
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.StreamDestroy(0, s)) }()
	host, err := l.MallocHost(0, 2*n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.FreeHost(host)) }()
	copy(host[:n], pattern(n, 5))
	d, err := l.Malloc(0, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, d)) }()
	require.NoError(t, l.MemcpyAsync(0, DeviceMem(d, n), HostMem(host[:n]), HostToDevice, s))
	require.NoError(t, l.MemcpyAsync(0, HostMem(host[n:]), DeviceMem(d, n), DeviceToHost, s))
	require.NoError(t, l.StreamSynchronize(0, s))
	assert.Equal(t, host[:n], host[n:])
}

func TestGPUHostAlloc(t *testing.T) {
	l := gpu(t)
	flags, err := l.GetDeviceFlags(0)
	require.NoError(t, err)
	t.Logf("device flags 0x%x", uint32(flags))
	if err := l.SetDeviceFlags(0, flags|DeviceMapHost); err != nil {
		assert.ErrorIs(t, err, ErrSetOnActiveProcess)
	} else {
		got, err := l.GetDeviceFlags(0)
		require.NoError(t, err)
		assert.NotZero(t, got&DeviceMapHost)
	}

	for _, f := range []HostAllocFlags{HostAllocDefault, HostAllocPortable, HostAllocMapped, HostAllocMapped | HostAllocWriteCombined, HostAllocPortable | HostAllocMapped} {
		t.Run(f.String(), func(t *testing.T) {
			host, err := l.HostAlloc(0, 4096, f)
			require.NoError(t, err)
			defer func() { assert.NoError(t, l.FreeHost(host)) }()
			clear(host)
			if f&HostAllocMapped == 0 {
				return
			}
			d, err := l.HostGetDevicePointer(0, host)
			require.NoError(t, err)
			require.NoError(t, l.Memset(0, d.Add(8), 0x42, 16))
			require.NoError(t, l.DeviceSynchronize(0))
			assert.Equal(t, byte(0), host[7])
			assert.Equal(t, byte(0x42), host[8])
			assert.Equal(t, byte(0x42), host[23])
			assert.Equal(t, byte(0), host[24])
		})
	}
}

func TestGPUHostRegister(t *testing.T) {
	l := gpu(t)
	const n = 1 << 20
	buf, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { assert.NoError(t, syscall.Munmap(buf)) }()
	require.NoError(t, l.HostRegister(0, buf, HostRegisterMapped))
	assert.ErrorIs(t, l.HostRegister(0, buf, HostRegisterMapped), ErrHostMemoryAlreadyRegistered)
	d, err := l.HostGetDevicePointer(0, buf)
	require.NoError(t, err)
	require.NoError(t, l.Memset(0, d, 0x17, 128))
	require.NoError(t, l.DeviceSynchronize(0))
	assert.Equal(t, byte(0x17), buf[127])
	assert.Equal(t, byte(0), buf[128])
	dev, err := l.Malloc(0, n)
	require.NoError(t, err)
	require.NoError(t, l.Memcpy(0, DeviceMem(dev, n), HostMem(buf), HostToDevice))
	require.NoError(t, l.Free(0, dev))
	require.NoError(t, l.HostUnregister(0, buf))
	assert.ErrorIs(t, l.HostUnregister(0, buf), ErrHostMemoryNotRegistered)
}

func TestGPUManaged(t *testing.T) {
	l := gpu(t)
	const n = 2 << 20
	p, err := l.MallocManaged(0, n, MemAttachGlobal)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, p)) }()
	require.NoError(t, l.Memset(0, p, 0x61, n))
	require.NoError(t, l.MemPrefetchAsync(0, p, n, 0, 0), "to the device")
	require.NoError(t, l.MemPrefetchAsync(0, p, n, CPUDevice, 0), "to the host")
	require.NoError(t, l.DeviceSynchronize(0))
	got := make([]byte, 4096)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(p.Add(n-4096), 4096), Default))
	assert.Equal(t, byte(0x61), got[4095])
}

func TestGPUAsyncAllocator(t *testing.T) {
	l := gpu(t)
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.StreamDestroy(0, s)) }()
	p, err := l.MallocAsync(0, 1<<20, s)
	require.NoError(t, err)
	require.NoError(t, l.StreamSynchronize(0, s))
	require.NoError(t, l.Memset(0, p, 1, 1<<20))
	require.NoError(t, l.FreeAsync(0, p, s))
	require.NoError(t, l.StreamSynchronize(0, s))

	old, err := l.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	require.NoError(t, l.SetMemPoolReleaseThreshold(0, 3<<20))
	v, err := l.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3<<20), v)
	require.NoError(t, l.SetMemPoolReleaseThreshold(0, old))
}

func TestGPUDevice(t *testing.T) {
	l := gpu(t)
	require.NoError(t, l.SetDevice(0))
	n, err := l.DeviceCount()
	require.NoError(t, err)
	assert.ErrorIs(t, l.SetDevice(n), ErrInvalidDevice)

	old, err := l.DeviceGetLimit(0, LimitMallocHeapSize)
	require.NoError(t, err)
	require.NoError(t, l.DeviceSetLimit(0, LimitMallocHeapSize, 32<<20))
	v, err := l.DeviceGetLimit(0, LimitMallocHeapSize)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, uint64(32<<20))
	require.NoError(t, l.DeviceSetLimit(0, LimitMallocHeapSize, old))
	_, err = l.DeviceGetLimit(0, LimitStackSize)
	assert.NoError(t, err)
}

func TestGPUVirtualMemory(t *testing.T) {
	l := gpuDriver(t)
	gmin, grec := granularities(t, l)
	require.Equal(t, 1, bits.OnesCount64(gmin), "granularity %d is a power of two", gmin)
	require.Equal(t, 1, bits.OnesCount64(grec), "granularity %d is a power of two", grec)
	g := gmin

	va, err := l.MemAddressReserve(2*g, g, 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.MemAddressFree(va, 2*g)) }()
	_, err = l.MemCreate(0, g+1)
	assert.ErrorIs(t, err, ErrInvalidValue, "not a multiple of the granularity")
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "CUDA_ERROR_INVALID_VALUE", ce.Name, "named by the driver")
	h, err := l.MemCreate(0, g)
	require.NoError(t, err)
	require.NoError(t, l.MemMap(va, g, 0, h))
	require.NoError(t, l.MemMap(va.Add(g), g, 0, h), "a second mapping of the same memory")
	require.NoError(t, l.MemRelease(h), "released memory lives while mapped")
	require.NoError(t, l.MemSetAccess(va, 2*g, []int{0}))

	require.NoError(t, l.Memset(0, va, 0x3c, g))
	require.NoError(t, l.Memset(0, va.Add(g+100), 0x11, 1))
	got := make([]byte, 128)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(va, 128), DeviceToHost))
	assert.Equal(t, byte(0x3c), got[99])
	assert.Equal(t, byte(0x11), got[100], "the mappings alias")

	next, err := l.MemAddressReserve(g, g, va.Add(2*g))
	require.NoError(t, err)
	t.Logf("hint %s, got %s", va.Add(2*g), next)
	require.NoError(t, l.MemAddressFree(next, g))

	require.NoError(t, l.MemUnmap(va, g))
	require.NoError(t, l.MemUnmap(va.Add(g), g))
}

func TestGPUClose(t *testing.T) {
	shared := gpu(t)
	l, err := Open()
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = l.Malloc(0, 64)
	assert.ErrorIs(t, err, ErrClosed)
	p, err := shared.Malloc(0, 64)
	require.NoError(t, err, "the runtime stays loaded for the other library")
	require.NoError(t, shared.Free(0, p))
}

func TestGPUHotPathDoesNotAllocate(t *testing.T) {
	assertHotPathAllocatesNothing(t, gpu(t))
}

func BenchmarkGPUMallocFree(b *testing.B) {
	benchMallocFree(b, gpu(b), 1<<20)
}

func BenchmarkGPUMallocAsyncFreeAsync(b *testing.B) {
	l := gpu(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := l.MallocAsync(0, 1<<20, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.FreeAsync(0, p, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.DeviceSynchronize(0); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkGPUMemcpyPinned4K(b *testing.B) {
	l := gpu(b)
	host, err := l.MallocHost(0, 4096)
	require.NoError(b, err)
	defer func() { require.NoError(b, l.FreeHost(host)) }()
	dev, err := l.Malloc(0, 4096)
	require.NoError(b, err)
	defer func() { require.NoError(b, l.Free(0, dev)) }()
	benchMemcpy(b, l, dev, host)
}
