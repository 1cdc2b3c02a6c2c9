package cudart

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// method is one exported method of library; the table says which calls it makes.
type method struct {
	name string
	// dev: the method takes a device ordinal and passes it on. Otherwise the
	// device the backend sees is -1 (none) or, for virtual memory, that of the
	// last MemCreate.
	dev  bool
	call func(l *library, dev int) error
}

// calls are the calls the table says m makes, in order.
func (m method) calls() []calls.Call { return calls.Of(m.name) }

// driver reports whether m needs libcuda.
func (m method) driver() bool { return m.calls()[0].Library() == calls.DriverLibrary }

func methods() []method {
	host := make([]byte, 64)
	d := DeviceMem(0x1000, 64)
	h := HostMem(host)
	return []method{
		{"DeviceCount", false, func(l *library, _ int) error { _, err := l.DeviceCount(); return err }},
		{"MemGetInfo", true, func(l *library, dev int) error { _, _, err := l.MemGetInfo(dev); return err }},
		{"Malloc", true, func(l *library, dev int) error { _, err := l.Malloc(dev, 64); return err }},
		{"Free", true, func(l *library, dev int) error { return l.Free(dev, 0x1000) }},
		{"MallocHost", true, func(l *library, dev int) error { _, err := l.MallocHost(dev, 64); return err }},
		{"FreeHost", false, func(l *library, _ int) error { return l.FreeHost(host) }},
		{"Memcpy", true, func(l *library, dev int) error { return l.Memcpy(dev, d, h, HostToDevice) }},
		{"Memset", true, func(l *library, dev int) error { return l.Memset(dev, 0x1000, 7, 64) }},
		{"DeviceSynchronize", true, func(l *library, dev int) error { return l.DeviceSynchronize(dev) }},
		{"StreamCreate", true, func(l *library, dev int) error { _, err := l.StreamCreate(dev); return err }},
		{"StreamSynchronize", true, func(l *library, dev int) error { return l.StreamSynchronize(dev, 1) }},
		{"StreamQuery", true, func(l *library, dev int) error { _, err := l.StreamQuery(dev, 1); return err }},
		{"StreamDestroy", true, func(l *library, dev int) error { return l.StreamDestroy(dev, 1) }},
		{"StreamDevice", true, func(l *library, dev int) error { _, err := l.StreamDevice(dev, 0x10); return err }},
		{"MemcpyAsync", true, func(l *library, dev int) error { return l.MemcpyAsync(dev, h, d, DeviceToHost, 1) }},
		{"MemsetAsync", true, func(l *library, dev int) error { return l.MemsetAsync(dev, 0x1000, 7, 64, 1) }},
		{"HostAlloc", true, func(l *library, dev int) error { _, err := l.HostAlloc(dev, 64, HostAllocMapped); return err }},
		{"HostGetDevicePointer", true, func(l *library, dev int) error { _, err := l.HostGetDevicePointer(dev, host); return err }},
		{"GetDeviceFlags", true, func(l *library, dev int) error { _, err := l.GetDeviceFlags(dev); return err }},
		{"SetDeviceFlags", true, func(l *library, dev int) error { return l.SetDeviceFlags(dev, DeviceMapHost) }},
		{"HostRegister", true, func(l *library, dev int) error { return l.HostRegister(dev, host, HostRegisterMapped) }},
		{"HostUnregister", true, func(l *library, dev int) error { return l.HostUnregister(dev, host) }},
		{"MallocManaged", true, func(l *library, dev int) error { _, err := l.MallocManaged(dev, 64, MemAttachGlobal); return err }},
		{"MemPrefetchAsync", true, func(l *library, dev int) error { return l.MemPrefetchAsync(dev, 0x1000, 64, CPUDevice, 0) }},
		{"MallocAsync", true, func(l *library, dev int) error { _, err := l.MallocAsync(dev, 64, 1); return err }},
		{"FreeAsync", true, func(l *library, dev int) error { return l.FreeAsync(dev, 0x1000, 1) }},
		{"MemPoolReleaseThreshold", true, func(l *library, dev int) error { _, err := l.MemPoolReleaseThreshold(dev); return err }},
		{"SetMemPoolReleaseThreshold", true, func(l *library, dev int) error { return l.SetMemPoolReleaseThreshold(dev, 1<<20) }},
		{"SetDevice", true, func(l *library, dev int) error { return l.SetDevice(dev) }},
		{"DeviceGetLimit", true, func(l *library, dev int) error { _, err := l.DeviceGetLimit(dev, LimitMallocHeapSize); return err }},
		{"DeviceSetLimit", true, func(l *library, dev int) error { return l.DeviceSetLimit(dev, LimitMallocHeapSize, 1<<24) }},
		{"RuntimeVersion", false, func(l *library, _ int) error { _, err := l.RuntimeVersion(); return err }},
		{"DriverVersion", false, func(l *library, _ int) error { _, err := l.DriverVersion(); return err }},
		{"DeviceName", true, func(l *library, dev int) error { _, err := l.DeviceName(dev); return err }},
		{"DeviceReset", true, func(l *library, dev int) error { return l.DeviceReset(dev) }},
		{"DeviceCanAccessPeer", false, func(l *library, dev int) error { _, err := l.DeviceCanAccessPeer(dev, 0); return err }},
		{"PointerAttributes", true, func(l *library, dev int) error { _, err := l.PointerAttributes(dev, 0x1000); return err }},
		{"MemGetAllocationGranularity", true, func(l *library, dev int) error { _, err := l.MemGetAllocationGranularity(dev, true); return err }},
		{"MemCreate", true, func(l *library, dev int) error { _, err := l.MemCreate(dev, 2<<20); return err }},
		{"MemGetExportableGranularity", true, func(l *library, dev int) error {
			_, err := l.MemGetExportableGranularity(dev, HandleTypePOSIXFileDescriptor, true)
			return err
		}},
		{"MemCreateExportable", true, func(l *library, dev int) error {
			_, err := l.MemCreateExportable(dev, 2<<20, HandleTypePOSIXFileDescriptor)
			return err
		}},
		{"MemRelease", false, func(l *library, _ int) error { return l.MemRelease(1) }},
		{"MemAddressReserve", false, func(l *library, _ int) error { _, err := l.MemAddressReserve(2<<20, 0, 0); return err }},
		{"MemAddressFree", false, func(l *library, _ int) error { return l.MemAddressFree(0x1000, 2<<20) }},
		{"MemMap", false, func(l *library, _ int) error { return l.MemMap(0x1000, 2<<20, 0, 1) }},
		{"MemUnmap", false, func(l *library, _ int) error { return l.MemUnmap(0x1000, 2<<20) }},
		{"MemSetAccess", false, func(l *library, _ int) error { return l.MemSetAccess(0x1000, 2<<20, []int{0, 1}) }},
		{"ModuleLoadData", true, func(l *library, dev int) error { _, err := l.ModuleLoadData(dev, testPTX); return err }},
		{"ModuleGetFunction", true, func(l *library, dev int) error {
			l.registry.addModule(0x1000, dev, testPTXInfo())
			_, err := l.ModuleGetFunction(dev, 0x1000, "fill")
			return err
		}},
		{"ModuleUnload", true, func(l *library, dev int) error {
			l.registry.addModule(0x1000, dev, testPTXInfo())
			return l.ModuleUnload(dev, 0x1000)
		}},
		{"LaunchKernel", true, func(l *library, dev int) error {
			withFill(l, dev)
			return l.LaunchKernel(dev, 0x2000, Dim1(2), Dim1(64), 0, 1, Arg[DevicePtr](0x1000), Arg[uint32](128), Arg[uint32](7))
		}},
		{"EventCreate", true, func(l *library, dev int) error { _, err := l.EventCreate(dev); return err }},
		{"EventRecord", true, func(l *library, dev int) error { return l.EventRecord(dev, 0x3000, 1) }},
		{"StreamWaitEvent", true, func(l *library, dev int) error { return l.StreamWaitEvent(dev, 1, 0x3000) }},
		{"EventSynchronize", true, func(l *library, dev int) error { return l.EventSynchronize(dev, 0x3000) }},
		{"EventQuery", true, func(l *library, dev int) error { _, err := l.EventQuery(dev, 0x3000); return err }},
		{"EventElapsedTime", true, func(l *library, dev int) error { _, err := l.EventElapsedTime(dev, 0x3000, 0x3010); return err }},
		{"EventDestroy", true, func(l *library, dev int) error { return l.EventDestroy(dev, 0x3000) }},
		{"StreamBeginCapture", true, func(l *library, dev int) error { return l.StreamBeginCapture(dev, 1, CaptureModeGlobal) }},
		{"StreamEndCapture", true, func(l *library, dev int) error { _, err := l.StreamEndCapture(dev, 1); return err }},
		{"GraphInstantiate", true, func(l *library, dev int) error { _, err := l.GraphInstantiate(dev, 0x4000); return err }},
		{"GraphLaunch", true, func(l *library, dev int) error { return l.GraphLaunch(dev, 0x5000, 1) }},
		{"GraphExecDestroy", true, func(l *library, dev int) error { return l.GraphExecDestroy(dev, 0x5000) }},
		{"GraphDestroy", true, func(l *library, dev int) error { return l.GraphDestroy(dev, 0x4000) }},
		{"GraphNodes", true, func(l *library, dev int) error { _, err := l.GraphNodes(dev, 0x4000); return err }},
		{"GraphNodeType", true, func(l *library, dev int) error { _, err := l.GraphNodeType(dev, 0x7000); return err }},
	}
}

func TestLibPassesDevice(t *testing.T) {
	for _, m := range methods() {
		t.Run(m.name, func(t *testing.T) {
			rec := newRecorder()
			l := newRecorderLibrary(rec, nil)
			require.NoError(t, m.call(l, 3))
			var want []string
			for _, c := range m.calls() {
				switch {
				case !c.Device():
					want = append(want, c.String()+"@-1")
				case m.dev:
					want = append(want, c.String()+"@3")
				default:
					want = append(want, c.String()+"@0")
				}
			}
			assert.Equal(t, want, rec.calls)
		})
	}
}

// TestLibMethodsCoverTheTable: every row but the binding's own is made by a
// method, so no row is dead and no method calls outside the table.
func TestLibMethodsCoverTheTable(t *testing.T) {
	made := map[calls.Call]bool{}
	for _, m := range methods() {
		for _, c := range m.calls() {
			made[c] = true
		}
	}
	for _, c := range calls.All() {
		assert.Equal(t, c.Capability() != calls.Binding, made[c], "%s (%s)", c, c.Capability())
	}
}

func TestLibVirtualMemoryUsesDeviceOfLastMemCreate(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	_, err := l.MemCreate(2, 2<<20)
	require.NoError(t, err)
	require.NoError(t, l.MemMap(0x1000, 2<<20, 0, 1))
	rec.codes[calls.CuMemCreate] = 2
	_, err = l.MemCreate(5, 2<<20)
	require.Error(t, err)
	require.NoError(t, l.MemSetAccess(0x1000, 2<<20, []int{7}))
	assert.Equal(t, []string{"cuMemCreate@2", "cuMemMap@2", "cuMemCreate@5", "cuMemSetAccess@2"}, rec.calls,
		"a failed MemCreate does not change the device")
}

func TestLibErrors(t *testing.T) {
	for _, m := range methods() {
		for _, failing := range m.calls() {
			t.Run(m.name+"/"+failing.String(), func(t *testing.T) {
				rec := newRecorder()
				rec.codes[failing] = ErrMemoryAllocation.Code
				err := m.call(newRecorderLibrary(rec, nil), 1)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrMemoryAllocation)
				assert.NotErrorIs(t, err, ErrInvalidValue)
				var ce *Error
				require.ErrorAs(t, err, &ce)
				assert.True(t, strings.HasPrefix(ce.Call, failing.String()+"("), "call %q names %s", ce.Call, failing)
				switch {
				case failing == calls.SetDevice:
					assert.Equal(t, "cudaSetDevice(1)", ce.Call)
				case failing == calls.CuDeviceGet:
					assert.Equal(t, "cuDeviceGet(1)", ce.Call)
				case m.dev:
					assert.Contains(t, ce.Call, "device 1")
				}
				if failing.Library() == calls.RuntimeLibrary {
					assert.Equal(t, "cudaError2", ce.Name, "the runtime names runtime codes")
				} else {
					assert.Equal(t, "CUDA_ERROR_2", ce.Name, "the driver names driver codes")
				}
			})
		}
	}
}

func TestLibErrorIsHumanReadable(t *testing.T) {
	rec := newRecorder()
	rec.codes[calls.Malloc] = 2
	_, err := newRecorderLibrary(rec, nil).Malloc(1, 4_300_000_000)
	require.Error(t, err)
	assert.Equal(t, "cudart: cudaMalloc(4.0 GiB) on device 1: cudaError2 (2): recorded runtime error", err.Error())
}

func TestLibClosed(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")
	assert.Equal(t, 1, rec.closes, "the libraries are unloaded once")
	for _, m := range methods() {
		err := m.call(l, 0)
		assert.ErrorIs(t, err, ErrClosed, m.name)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), m.calls()[len(m.calls())-1].String(), "the error names the call")
		}
	}
	assert.Empty(t, rec.calls, "nothing reaches CUDA after Close")
}

func TestLibWithoutDriver(t *testing.T) {
	why := &LoadError{Library: "CUDA driver", Tried: []string{"libcuda.so.1: not found"}, Err: ErrNoDriverLibrary}
	for _, m := range methods() {
		t.Run(m.name, func(t *testing.T) {
			rec := newRecorder()
			err := m.call(newRecorderLibrary(rec, why), 0)
			if !m.driver() {
				assert.NoError(t, err, "the runtime works without the driver")
				return
			}
			assert.ErrorIs(t, err, ErrNoDriverLibrary)
			var le *LoadError
			require.ErrorAs(t, err, &le, "the error says why the driver is missing")
			assert.Contains(t, err.Error(), "libcuda.so.1: not found")
			assert.Empty(t, rec.calls)
		})
	}
}

func TestLibRefusesBadArguments(t *testing.T) {
	host := make([]byte, 16)
	cases := []struct {
		name string
		call func(l *library) error
		want string
	}{
		{"copy lengths differ", func(l *library) error { return l.Memcpy(0, HostMem(host), DeviceMem(0x1000, 32), DeviceToHost) }, "dst has 16 B (16 B) but src has 32 B (32 B)"},
		{"async copy lengths differ", func(l *library) error {
			return l.MemcpyAsync(0, DeviceMem(0x1000, 8), HostMem(host), HostToDevice, 0)
		}, "dst has 8 B"},
		{"host dst of a copy to device", func(l *library) error { return l.Memcpy(0, HostMem(host), HostMem(host), HostToDevice) }, "cudaMemcpyHostToDevice copies host to device, not host to host"},
		{"device src of a copy from host", func(l *library) error {
			return l.Memcpy(0, HostMem(host), DeviceMem(0x1000, 16), HostToHost)
		}, "copies host to host, not device to host"},
		{"unknown kind", func(l *library) error { return l.Memcpy(0, HostMem(host), HostMem(host), 9) }, "kind 9 is not a cudaMemcpyKind"},
		{"register nothing", func(l *library) error { return l.HostRegister(0, nil, HostRegisterDefault) }, "no memory to register"},
		{"unregister nothing", func(l *library) error { return l.HostUnregister(0, host[:0]) }, "no memory to unregister"},
		{"device pointer of nothing", func(l *library) error { _, err := l.HostGetDevicePointer(0, nil); return err }, "no memory to map"},
		{"access for no device", func(l *library) error { return l.MemSetAccess(0x1000, 2<<20, nil) }, "no device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder()
			err := c.call(newRecorderLibrary(rec, nil))
			assert.ErrorIs(t, err, ErrInvalidValue)
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.NotEmpty(t, ce.Call)
			assert.Contains(t, err.Error(), c.want)
			assert.Empty(t, rec.calls, "refused before CUDA")
		})
	}
}

func TestMemcpyOfNothingDoesNothing(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	assert.NoError(t, l.Memcpy(0, DeviceMem(0x1000, 0), HostMem(nil), HostToDevice))
	assert.NoError(t, l.MemcpyAsync(0, DeviceMem(0, 0), DeviceMem(0x1000, 0), DeviceToDevice, 0))
	assert.Empty(t, rec.calls)
}

// TestMemcpyChecksProperty: over random operands, a copy reaches CUDA exactly
// when the lengths match, are not zero and the kind fits the sides, with the
// length asked; every refusal is ErrInvalidValue except a fitting empty copy.
func TestMemcpyChecksProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mem := func() Mem {
		n := rng.IntN(4) * 8
		if rng.IntN(2) == 0 {
			return HostMem(make([]byte, n))
		}
		return DeviceMem(DevicePtr(0x1000+rng.IntN(1<<20)), uint64(n))
	}
	for i := range 2000 {
		dst, src := mem(), mem()
		kind := MemcpyKind(rng.IntN(7) - 1)
		async := rng.IntN(2) == 0
		rec := newRecorder()
		l := newRecorderLibrary(rec, nil)
		var err error
		if async {
			err = l.MemcpyAsync(0, dst, src, kind, 0)
		} else {
			err = l.Memcpy(0, dst, src, kind)
		}
		fits := kind >= HostToHost && kind <= Default &&
			(kind == Default || (dst.IsHost() == (kind == HostToHost || kind == DeviceToHost) &&
				src.IsHost() == (kind == HostToHost || kind == HostToDevice)))
		reaches := dst.Len() == src.Len() && dst.Len() > 0 && fits
		if reaches {
			require.NoError(t, err, "case %d: %s <- %s, %s", i, dst, src, kind)
			require.Equal(t, []uint64{dst.Len()}, rec.copies)
			continue
		}
		require.Empty(t, rec.calls, "case %d: %s <- %s, %s", i, dst, src, kind)
		if dst.Len() == src.Len() && fits {
			require.NoError(t, err, "an empty copy does nothing")
		} else {
			require.ErrorIs(t, err, ErrInvalidValue)
		}
	}
}

func TestLibPaths(t *testing.T) {
	l := &library{be: newRecorder(), path: "/x/libcudart.so.13", driverPath: "/y/libcuda.so.1"}
	assert.Equal(t, "/x/libcudart.so.13", l.Path())
	assert.Equal(t, "/y/libcuda.so.1", l.DriverPath())
}

func TestFailFallsBackToKnownNames(t *testing.T) {
	l := newRecorderLibrary(&silentRecorder{recorder: newRecorder()}, nil)
	err := l.fail(calls.Malloc, ret{code: 2, failed: calls.Malloc}, "(%d B)", 1)
	assert.Equal(t, "cudart: cudaMalloc(1 B): cudaErrorMemoryAllocation (2): out of memory", err.Error())
	assert.True(t, errors.Is(err, ErrMemoryAllocation))
}

// silentRecorder is a backend whose library has no text for codes.
type silentRecorder struct{ *recorder }

func (silentRecorder) text(Code, calls.Library) (string, string) { return "", "" }

// Without cudaStreamGetDevice (before CUDA 12.8), StreamDevice answers for
// the special streams and those StreamCreate made, calling nothing, and
// says ErrNotSupported of a stream made elsewhere.
func TestStreamDeviceWithoutTheCall(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	l.noStreamGetDevice = true
	const s Stream = 0x1000
	l.registry.streamCreated(s, 2) // as StreamCreate on device 2 notes it
	for _, c := range []struct {
		s    Stream
		want int
	}{{s, 2}, {0, 1}, {streamLegacy, 1}, {streamPerThread, 1}} {
		got, err := l.StreamDevice(1, c.s)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "stream 0x%x", uintptr(c.s))
	}
	_, err := l.StreamDevice(1, 0x7777)
	require.ErrorIs(t, err, ErrNotSupported)
	assert.Contains(t, err.Error(), "cudaStreamGetDevice")
	assert.Empty(t, rec.calls, "nothing asked of CUDA")
	require.NoError(t, l.StreamDestroy(2, s))
	rec.calls = nil
	_, err = l.StreamDevice(1, s)
	require.ErrorIs(t, err, ErrInvalidResourceHandle, "a destroyed stream")
	assert.Empty(t, rec.calls)
}
