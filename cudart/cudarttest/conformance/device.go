package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func (s *suite) testDevice(t *testing.T, d cudart.Device) {
	t.Run("SetDevice", func(t *testing.T) {
		assert.NoError(t, d.SetDevice(s.dev))
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		assert.ErrorIs(t, d.SetDevice(count), cudart.ErrInvalidDevice)
		assert.NoError(t, d.SetDevice(s.dev), "the suite's device again")
	})
	t.Run("Versions", func(t *testing.T) {
		rv, err := d.RuntimeVersion()
		require.NoError(t, err)
		assert.Positive(t, rv)
		dv, err := d.DriverVersion()
		require.NoError(t, err)
		assert.Positive(t, dv)
	})
	t.Run("Name", func(t *testing.T) {
		name, err := d.DeviceName(s.dev)
		require.NoError(t, err)
		assert.NotEmpty(t, name)
	})
	t.Run("MallocHeapLimit", func(t *testing.T) {
		old, err := d.DeviceGetLimit(s.dev, cudart.LimitMallocHeapSize)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.DeviceSetLimit(s.dev, cudart.LimitMallocHeapSize, old)) })
		want := max(2*old, 16*mib)
		require.NoError(t, d.DeviceSetLimit(s.dev, cudart.LimitMallocHeapSize, want))
		got, err := d.DeviceGetLimit(s.dev, cudart.LimitMallocHeapSize)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got, want, "CUDA may round the heap up, never down")
	})
	t.Run("UnknownLimit", func(t *testing.T) {
		err := d.DeviceSetLimit(s.dev, cudart.Limit(0x7fff), mib)
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a value that is no cudaLimit")
		_, err = d.DeviceGetLimit(s.dev, cudart.Limit(0x7fff))
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a value that is no cudaLimit")
	})
}

// testReset: cudaDeviceReset destroys what the device's context holds, and
// the device works after it: its memory is freed (a free of a pointer from
// before is refused), its pinned host memory freed, its host registrations
// undone (the same bytes register again). Virtual memory is the process's
// and outlives the reset: the physical memory stays taken, and unmap,
// release and address free all succeed after it, the memory coming back at
// release. DeviceResets counts each reset. A reset after a fault CUDA
// documents as fatal leaves the device unusable for the rest of the
// process, which would spoil the rest of the suite: the module's root
// recovery test shows that in a child process.
func (s *suite) testReset(t *testing.T, d cudart.Device) {
	// reset resets the device, checks the count and returns the free memory
	// before and after.
	reset := func(t *testing.T) (during, after uint64) {
		t.Helper()
		during, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		n := d.DeviceResets(s.dev)
		require.NoError(t, d.DeviceReset(s.dev))
		assert.Equal(t, n+1, d.DeviceResets(s.dev), "DeviceResets counts the reset")
		after, _, err = s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		return during, after
	}
	t.Run("Memory", func(t *testing.T) {
		const n = 64 * mib
		p, err := s.rt.Malloc(s.dev, n)
		require.NoError(t, err, "memory the reset frees")
		during, after := reset(t)
		assert.GreaterOrEqual(t, after, during+n/2, "the reset returned the memory")
		assert.ErrorIs(t, s.rt.Free(s.dev, p), cudart.ErrInvalidValue, "a pointer from before the reset")
		p = s.malloc(t, mib)
		want := pattern(90, mib)
		s.write(t, p, want)
		assert.True(t, bytes.Equal(want, s.read(t, p, mib)), "the device works after the reset")
	})
	t.Run("PinnedHost", func(t *testing.T) {
		b, err := s.rt.MallocHost(s.dev, mib)
		require.NoError(t, err, "pinned memory the reset frees")
		reset(t)
		assert.ErrorIs(t, s.rt.FreeHost(b), cudart.ErrInvalidValue, "pinned memory from before the reset")
		s.pinned(t, mib)
	})
	t.Run("Registered", func(t *testing.T) {
		hr := need[cudart.HostRegisterer](t, s.rt)
		b := make([]byte, mib)
		require.NoError(t, hr.HostRegister(s.dev, b, 0), "a registration the reset undoes")
		reset(t)
		assert.ErrorIs(t, hr.HostUnregister(s.dev, b), cudart.ErrHostMemoryNotRegistered, "memory registered before the reset")
		require.NoError(t, hr.HostRegister(s.dev, b, 0), "the same bytes register again")
		require.NoError(t, hr.HostUnregister(s.dev, b))
	})
	t.Run("VirtualMemory", func(t *testing.T) {
		v := s.virtualMemory(t)
		vm, g := v.vm, v.g
		size := max(g, 64*mib/g*g)
		before, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		va, err := vm.MemAddressReserve(size, 0, 0)
		require.NoError(t, err)
		h, err := vm.MemCreate(s.dev, size)
		require.NoError(t, err)
		require.NoError(t, vm.MemMap(va, size, 0, h))
		require.NoError(t, vm.MemSetAccess(va, size, []int{s.dev}))
		during, after := reset(t)
		assert.Less(t, after, before-size/2, "the reset kept the physical memory (free %d before it was created, %d mapped, %d after the reset)", before, during, after)
		assert.NoError(t, vm.MemUnmap(va, size), "the mapping outlives the reset")
		assert.NoError(t, vm.MemRelease(h), "the handle outlives the reset")
		released, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, released+g, before, "the memory comes back at release, within a granule (free %d before it was created, %d after release)", before, released)
		assert.NoError(t, vm.MemAddressFree(va, size), "the reservation outlives the reset")
	})
}
