package conformance

import (
	"reflect"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testPointerAttributes: cudaPointerGetAttributes tells each kind of memory
// apart, as CUDA 11 and later document it: device memory (cudaMalloc, and
// virtual memory mapped to the device) is cudaMemoryTypeDevice on its
// device, reached at its own address; pinned and registered host memory is
// cudaMemoryTypeHost, asked at its host address or at its device alias,
// with the device that pinned it and both addresses; managed memory is
// cudaMemoryTypeManaged, at one address for both; pageable memory is
// cudaMemoryTypeUnregistered, and the call succeeds. Only what CUDA
// documents is asserted: not the device address of host memory that was
// not mapped (CUDA maps all of it on a 64-bit host; the fake only what was
// asked to be), nor the host address of device memory.
func (s *suite) testPointerAttributes(t *testing.T, d cudart.Device) {
	attrs := func(t *testing.T, p cudart.DevicePtr) cudart.PointerAttributes {
		t.Helper()
		at, err := d.PointerAttributes(s.dev, p)
		require.NoError(t, err, calls.PointerGetAttributes)
		return at
	}
	t.Run("Device", func(t *testing.T) {
		p := s.malloc(t, mib)
		for _, q := range []cudart.DevicePtr{p, p.Add(mib / 2)} {
			at := attrs(t, q)
			assert.Equal(t, cudart.MemoryDevice, at.Type, "%s in cudaMalloc memory", q)
			assert.Equal(t, s.dev, at.Device, "%s", q)
			assert.Equal(t, q, at.DevicePointer, "%s", q)
		}
	})
	t.Run("PinnedHost", func(t *testing.T) {
		b := s.pinned(t, 64*kib)
		for _, off := range []int{0, 4 * kib} {
			at := attrs(t, addrOf(b[off:]))
			assert.Equal(t, cudart.MemoryHost, at.Type, "cudaMallocHost memory at %d B", off)
			assert.Equal(t, s.dev, at.Device, "the device that pinned it")
			assert.Equal(t, uintptr(addrOf(b[off:])), at.HostPointer, "its host address")
		}
	})
	t.Run("HostAllocMapped", func(t *testing.T) {
		ha := need[cudart.HostAllocator](t, s.rt)
		b, err := ha.HostAlloc(s.dev, 64*kib, cudart.HostAllocMapped)
		require.NoError(t, err)
		once(t, calls.FreeHost, func() error { return s.rt.FreeHost(b) })
		s.checkHostAliases(t, d, ha, b)
	})
	t.Run("HostRegisterMapped", func(t *testing.T) {
		hr := need[cudart.HostRegisterer](t, s.rt)
		ha := need[cudart.HostAllocator](t, s.rt)
		b := make([]byte, 64*kib)
		require.NoError(t, hr.HostRegister(s.dev, b, cudart.HostRegisterMapped))
		once(t, calls.HostUnregister, func() error { return hr.HostUnregister(s.dev, b) })
		s.checkHostAliases(t, d, ha, b)
	})
	t.Run("Managed", func(t *testing.T) {
		m := need[cudart.Managed](t, s.rt)
		p, err := m.MallocManaged(s.dev, mib, cudart.MemAttachGlobal)
		require.NoError(t, err)
		once(t, calls.Free, func() error { return s.rt.Free(s.dev, p) })
		at := attrs(t, p)
		assert.Equal(t, cudart.MemoryManaged, at.Type)
		assert.Equal(t, p, at.DevicePointer, "the devices reach managed memory at its address")
		assert.Equal(t, uintptr(p), at.HostPointer, "so does the host")
	})
	t.Run("VirtualMemory", func(t *testing.T) {
		v := s.virtualMemory(t)
		h, _ := v.create(t, v.g)
		va := v.reserve(t, v.g, 0)
		v.mapAt(t, va, v.g, h)
		at := attrs(t, va)
		assert.Equal(t, cudart.MemoryDevice, at.Type, "memory of cuMemCreate mapped with cuMemMap")
		assert.Equal(t, s.dev, at.Device)
		assert.Equal(t, va, at.DevicePointer)
	})
	t.Run("Pageable", func(t *testing.T) {
		b := make([]byte, 64*kib)
		assert.Equal(t, cudart.MemoryUnregistered, attrs(t, addrOf(b)).Type, "Go memory never registered")
	})
}

// checkHostAliases checks what CUDA tells of mapped host memory b, asked at
// its host address and at its device alias, at its start and inside it.
func (s *suite) checkHostAliases(t *testing.T, d cudart.Device, ha cudart.HostAllocator, b []byte) {
	t.Helper()
	alias, err := ha.HostGetDevicePointer(s.dev, b)
	require.NoError(t, err, calls.HostGetDevicePointer)
	for _, off := range []uint64{0, 4 * kib} {
		host := addrOf(b[off:])
		for _, q := range []cudart.DevicePtr{host, alias.Add(off)} {
			at, err := d.PointerAttributes(s.dev, q)
			require.NoError(t, err, calls.PointerGetAttributes)
			assert.Equal(t, cudart.MemoryHost, at.Type, "%s, %d B into mapped host memory", q, off)
			assert.Equal(t, s.dev, at.Device, "the device that pinned it")
			assert.Equal(t, uintptr(host), at.HostPointer, "%s: the host address", q)
			assert.Equal(t, alias.Add(off), at.DevicePointer, "%s: the device alias", q)
		}
	}
}

// addrOf is the address of b's first byte, as CUDA takes a host pointer.
// Reflection tells it without unsafe.
func addrOf(b []byte) cudart.DevicePtr { return cudart.DevicePtr(reflect.ValueOf(b).Pointer()) }
