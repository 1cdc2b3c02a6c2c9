package cudart

import (
	"embed"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakes caches the fake library built for each set of defines.
var fakes struct {
	sync.Mutex
	dir   string            // removed by TestMain
	built map[string]string // defines -> library
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakes.dir != "" {
		_ = os.RemoveAll(fakes.dir)
	}
	os.Exit(code)
}

// testSources are the C libraries the tests build: a fake CUDA and a fake
// NVTX tool.
//
//go:embed testdata/fakecuda.c testdata/fakenvtx.c
var testSources embed.FS

// buildFake returns a fresh copy of testdata/fakecuda.c built with defs: the
// loader maps each copy apart, so every test starts from new fake state. The
// build is cached; the test is skipped where there is no C compiler (a GPU
// host). The binding itself needs none: these tests pass with CGO_ENABLED=0.
func buildFake(t testing.TB, defs ...string) string {
	t.Helper()
	return buildTestLibrary(t, "fakecuda.c", defs...)
}

// buildTestLibrary is buildFake for any C file of testdata.
func buildTestLibrary(t testing.TB, source string, defs ...string) string {
	t.Helper()
	fakes.Lock()
	defer fakes.Unlock()
	key := strings.Join(append([]string{source}, defs...), " ")
	built, ok := fakes.built[key]
	if !ok {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		path, err := exec.LookPath(cc)
		if err != nil {
			t.Skipf("no C compiler to build %s: %v", source, err)
		}
		if fakes.dir == "" {
			fakes.dir, err = os.MkdirTemp("", "cudart-fake-")
			require.NoError(t, err)
			fakes.built = map[string]string{}
		}
		// The source is embedded, so that the test binary builds it
		// wherever it runs (a GPU host, away from the sources).
		src, err := testSources.ReadFile("testdata/" + source)
		require.NoError(t, err)
		srcPath := filepath.Join(fakes.dir, source)
		require.NoError(t, os.WriteFile(srcPath, src, 0o644))
		built = filepath.Join(fakes.dir, fmt.Sprintf("fake%d.so", len(fakes.built)))
		args := append([]string{"-shared", "-fPIC", "-o", built, srcPath}, defs...)
		out, err := exec.Command(path, args...).CombinedOutput()
		require.NoError(t, err, "building %s: %s", source, out)
		fakes.built[key] = built
	}
	b, err := os.ReadFile(built)
	require.NoError(t, err)
	so := filepath.Join(t.TempDir(), "lib"+strings.TrimSuffix(source, ".c")+".so")
	require.NoError(t, os.WriteFile(so, b, 0o755))
	return so
}

// openFake opens the fake as both runtime and driver.
func openFake(t testing.TB, defs ...string) *library {
	t.Helper()
	so := buildFake(t, defs...)
	l, err := Open(WithLibraryPath(so), WithDriverLibraryPath(so))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	require.Equal(t, so, l.Path(), "Path is the file loaded")
	require.Equal(t, so, l.DriverPath())
	return l.(*library)
}

func TestFakeMemoryRoundTrip(t *testing.T) {
	l := openFake(t)
	n, err := l.DeviceCount()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	free, total, err := l.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, [2]uint64{1 << 30, 2 << 30}, [2]uint64{free, total}, "free then total")

	const size = 1000
	a, err := l.Malloc(0, size)
	require.NoError(t, err)
	b, err := l.Malloc(0, size)
	require.NoError(t, err)
	assert.Zero(t, a%256)

	src := pattern(size, 3)
	require.NoError(t, l.Memcpy(0, DeviceMem(a, size), HostMem(src), HostToDevice))
	require.NoError(t, l.Memcpy(0, DeviceMem(b, size), DeviceMem(a, size), DeviceToDevice))
	require.NoError(t, l.Memset(0, b.Add(10), 0xee, 5))
	got := make([]byte, size)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(b, size), DeviceToHost))
	want := append([]byte(nil), src...)
	copy(want[10:15], []byte{0xee, 0xee, 0xee, 0xee, 0xee})
	assert.Equal(t, want, got)

	h2h := make([]byte, size)
	require.NoError(t, l.Memcpy(0, HostMem(h2h), HostMem(got), HostToHost))
	assert.Equal(t, want, h2h)
	clear(got)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(a, size), Default))
	assert.Equal(t, src, got)

	require.NoError(t, l.Free(0, a))
	require.NoError(t, l.Free(0, b))
	require.NoError(t, l.DeviceSynchronize(0))
}

func TestFakeErrorsComeFromTheLibrary(t *testing.T) {
	l := openFake(t)
	_, err := l.Malloc(1, 64)
	assert.ErrorIs(t, err, ErrInvalidDevice)
	assert.EqualError(t, err, "cudart: cudaMalloc(64 B) on device 1: cudaErrorInvalidDevice (101): fake message 101")

	_, err = l.Malloc(math.MaxInt32+1, 64)
	assert.ErrorIs(t, err, ErrInvalidDevice, "a device ordinal too big for C does not wrap to device 0")

	_, err = l.Malloc(0, 2<<40)
	assert.ErrorIs(t, err, ErrMemoryAllocation)

	_, err = l.MemCreate(0, 1<<20)
	assert.ErrorIs(t, err, ErrInvalidValue)
	assert.EqualError(t, err, "cudart: cuMemCreate(1.0 MiB, pinned on device 0): CUDA_ERROR_INVALID_VALUE (1): fake driver message")

	_, err = l.DeviceName(1)
	assert.ErrorIs(t, err, ErrInvalidDevice)
	assert.Contains(t, err.Error(), "CUDA_ERROR_INVALID_DEVICE")

	_, err = l.MemCreate(1, 2<<20)
	assert.EqualError(t, err, "cudart: cuMemCreate(2.0 MiB, pinned on device 1): cudaErrorInvalidDevice (101): fake message 101",
		"selecting the device is a runtime call, named by the runtime")
}

func TestFakeHostMemory(t *testing.T) {
	l := openFake(t)
	p, err := l.HostAlloc(0, 256, HostAllocMapped|HostAllocPortable)
	require.NoError(t, err)
	require.Len(t, p, 256)
	d, err := l.HostGetDevicePointer(0, p)
	require.NoError(t, err)
	inner, err := l.HostGetDevicePointer(0, p[16:])
	require.NoError(t, err)
	assert.Equal(t, d.Add(16), inner, "the fake maps host memory at its own address")
	require.NoError(t, l.Memset(0, d, 0x5a, 256))
	for _, c := range p {
		require.Equal(t, byte(0x5a), c)
	}
	require.NoError(t, l.FreeHost(p))
	require.NoError(t, l.FreeHost(nil), "freeing nothing")

	p, err = l.MallocHost(0, 64)
	require.NoError(t, err)
	require.NoError(t, l.FreeHost(p))

	buf := make([]byte, 4096)
	require.NoError(t, l.HostRegister(0, buf, HostRegisterMapped))
	assert.ErrorIs(t, l.HostRegister(0, buf, HostRegisterMapped), ErrHostMemoryAlreadyRegistered)
	require.NoError(t, l.HostUnregister(0, buf))
	assert.ErrorIs(t, l.HostUnregister(0, buf), ErrHostMemoryNotRegistered)

	require.NoError(t, l.SetDeviceFlags(0, DeviceMapHost))
	f, err := l.GetDeviceFlags(0)
	require.NoError(t, err)
	assert.Equal(t, DeviceMapHost, f)
}

func TestFakeStreamsAndAsync(t *testing.T) {
	l := openFake(t)
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	assert.NotZero(t, s)
	p, err := l.MallocAsync(0, 128, s)
	require.NoError(t, err)
	src := pattern(128, 1)
	require.NoError(t, l.MemcpyAsync(0, DeviceMem(p, 128), HostMem(src), HostToDevice, s))
	got := make([]byte, 128)
	require.NoError(t, l.MemcpyAsync(0, HostMem(got), DeviceMem(p, 128), DeviceToHost, s))
	done, err := l.StreamQuery(0, s)
	require.NoError(t, err)
	assert.False(t, done, "cudaErrorNotReady is not done")
	require.NoError(t, l.StreamSynchronize(0, s))
	done, err = l.StreamQuery(0, s)
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, src, got)
	require.NoError(t, l.FreeAsync(0, p, s))
	require.NoError(t, l.StreamDestroy(0, s))

	require.NoError(t, l.SetMemPoolReleaseThreshold(0, 3<<20))
	v, err := l.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3<<20), v)
	_, err = l.MemPoolReleaseThreshold(2)
	assert.ErrorIs(t, err, ErrInvalidDevice)
}

func TestFakeDevice(t *testing.T) {
	l := openFake(t, "-DFAKE_VERSION=12080")
	require.NoError(t, l.SetDevice(0))
	assert.ErrorIs(t, l.SetDevice(3), ErrInvalidDevice)
	for _, lim := range []Limit{LimitStackSize, LimitPrintfFifoSize, LimitMallocHeapSize} {
		require.NoError(t, l.DeviceSetLimit(0, lim, uint64(16<<20+lim)))
		v, err := l.DeviceGetLimit(0, lim)
		require.NoError(t, err)
		assert.Equal(t, uint64(16<<20+lim), v, "limit %d", lim)
	}
	rv, err := l.RuntimeVersion()
	require.NoError(t, err)
	assert.Equal(t, 12080, rv)
	dv, err := l.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, dv)
	name, err := l.DeviceName(0)
	require.NoError(t, err)
	assert.Equal(t, "Fake GPU 0", name)
	// The fake C library answers every field apart: see fakecuda.c.
	at, err := l.PointerAttributes(0, 0x7000)
	require.NoError(t, err)
	assert.Equal(t, PointerAttributes{Type: MemoryHost, Device: 0, DevicePointer: 0x7010, HostPointer: 0x7000}, at)
	_, err = l.PointerAttributes(1, 0x7000)
	assert.ErrorIs(t, err, ErrInvalidDevice)
}

// TestFakePrefetchSignature checks that each runtime gets the prefetch
// signature it exports: the fake writes the form and arguments it received
// into the memory.
func TestFakePrefetchSignature(t *testing.T) {
	cases := []struct {
		name string
		defs []string
		// form: 'L' CUDA 13's cudaMemPrefetchAsync, 'V' _v2, 'D' the old one.
		form byte
	}{
		{"CUDA 13", []string{"-DFAKE_VERSION=13000"}, 'L'},
		{"CUDA 12 with _v2", []string{"-DFAKE_VERSION=12020", "-DFAKE_PREFETCH_V2"}, 'V'},
		{"CUDA 13 with _v2", []string{"-DFAKE_VERSION=13000", "-DFAKE_PREFETCH_V2"}, 'V'},
		{"CUDA 12 without _v2", []string{"-DFAKE_VERSION=12010"}, 'D'},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := openFake(t, c.defs...)
			p, err := l.MallocManaged(0, 4096, MemAttachGlobal)
			require.NoError(t, err)
			defer func() { assert.NoError(t, l.Free(0, p)) }()
			for _, dst := range []int{0, CPUDevice} {
				require.NoError(t, l.MemPrefetchAsync(0, p, 3000, dst, 0))
				got := make([]byte, 8)
				require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(p, 8), DeviceToHost))
				want := []byte{c.form, 0, byte(dst), 0, 3000 & 0xff, 3000 >> 8, 0, 0}
				if c.form != 'D' {
					// cudaMemLocation: device 1 with the ordinal, host 2 with 0.
					want[1], want[2] = 1, byte(dst)
					if dst == CPUDevice {
						want[1], want[2] = 2, 0
					}
				}
				assert.Equal(t, want, got, "prefetch to %d", dst)
			}
		})
	}
}

// granularities is device 0's minimum and recommended granularity.
func granularities(t *testing.T, l *library) (minimum, recommended uint64) {
	t.Helper()
	minimum, err := l.MemGetAllocationGranularity(0, false)
	require.NoError(t, err)
	recommended, err = l.MemGetAllocationGranularity(0, true)
	require.NoError(t, err)
	return minimum, recommended
}

func TestFakeVirtualMemory(t *testing.T) {
	l := openFake(t)
	gmin, grec := granularities(t, l)
	assert.Equal(t, [2]uint64{2 << 20, 4 << 20}, [2]uint64{gmin, grec}, "minimum then recommended")

	va, err := l.MemAddressReserve(2*gmin, gmin, 0)
	require.NoError(t, err)
	h, err := l.MemCreate(0, gmin)
	require.NoError(t, err)
	require.NoError(t, l.MemMap(va.Add(gmin), gmin, 0, h))
	assert.ErrorIs(t, l.MemMap(va.Add(gmin), gmin, 1, h), ErrInvalidValue, "the offset reaches cuMemMap")
	require.NoError(t, l.MemSetAccess(va.Add(gmin), gmin, []int{0}))
	assert.ErrorIs(t, l.MemSetAccess(va.Add(gmin), gmin, []int{0, 1}), ErrInvalidDevice, "one descriptor per device")
	many := make([]int, 40)
	require.NoError(t, l.MemSetAccess(va, 2*gmin, many), "more devices than fit on the C stack")

	require.NoError(t, l.Memset(0, va.Add(gmin), 0x77, 64))
	got := make([]byte, 64)
	require.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(va.Add(gmin), 64), DeviceToHost))
	assert.Equal(t, byte(0x77), got[63])

	require.NoError(t, l.MemUnmap(va.Add(gmin), gmin))
	require.NoError(t, l.MemRelease(h))
	assert.ErrorIs(t, l.MemAddressFree(va, gmin), ErrInvalidValue, "the size reaches cuMemAddressFree")
	require.NoError(t, l.MemAddressFree(va, 2*gmin))
}

func TestFakeClose(t *testing.T) {
	so := buildFake(t)
	l, err := Open(WithLibraryPath(so))
	require.NoError(t, err)
	_, err = l.Malloc(0, 64)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = l.Malloc(0, 64)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, l.Close())
}

func TestFakeConcurrentUse(t *testing.T) {
	l := openFake(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := pattern(512, byte(g))
			got := make([]byte, 512)
			for range 200 {
				p, err := l.Malloc(0, 512)
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, l.Memcpy(0, DeviceMem(p, 512), HostMem(src), HostToDevice))
				assert.NoError(t, l.Memcpy(0, HostMem(got), DeviceMem(p, 512), DeviceToHost))
				assert.NoError(t, l.Free(0, p))
				if !assert.Equal(t, src, got) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestFakeHotPathDoesNotAllocate: the calls a pool makes per buffer allocate
// nothing in Go; only errors do.
func TestFakeHotPathDoesNotAllocate(t *testing.T) {
	assertHotPathAllocatesNothing(t, openFake(t))
}

func TestCint(t *testing.T) {
	assert.Equal(t, int32(-1), int32(cint(CPUDevice)))
	assert.Equal(t, int32(7), int32(cint(7)))
	assert.Equal(t, int32(math.MinInt32), int32(cint(1<<40)), "too big for C: rejected by CUDA, not wrapped")
	assert.Equal(t, int32(math.MinInt32), int32(cint(MemcpyKind(-1<<33))))
	assert.Zero(t, cint(CPUDevice)>>32, "the upper half of the register is clear")
}

// benchMallocFree times a cudaMalloc of size bytes on device 0 and its
// cudaFree.
func benchMallocFree(b *testing.B, l *library, size uint64) {
	b.ReportAllocs()
	for b.Loop() {
		p, err := l.Malloc(0, size)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Free(0, p); err != nil {
			b.Fatal(err)
		}
	}
}

// benchMemcpy times a copy of host's bytes to dev on device 0.
func benchMemcpy(b *testing.B, l *library, dev DevicePtr, host []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(host)))
	for b.Loop() {
		if err := l.Memcpy(0, DeviceMem(dev, uint64(len(host))), HostMem(host), HostToDevice); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFakeMallocFree(b *testing.B) {
	benchMallocFree(b, openFake(b), 1024)
}

func BenchmarkFakeMemcpy4K(b *testing.B) {
	l := openFake(b)
	dev, err := l.Malloc(0, 4096)
	require.NoError(b, err)
	benchMemcpy(b, l, dev, make([]byte, 4096))
	require.NoError(b, l.Free(0, dev))
}
