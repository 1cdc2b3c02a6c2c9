package conformance

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// pinned allocates pinned host memory freed at cleanup.
func (s *suite) pinned(t testing.TB, n uint64) []byte {
	t.Helper()
	b, err := s.rt.MallocHost(s.dev, n)
	require.NoError(t, err, calls.MallocHost)
	require.Len(t, b, int(n), calls.MallocHost)
	once(t, calls.FreeHost, func() error { return s.rt.FreeHost(b) })
	return b
}

func (s *suite) testPinnedHost(t *testing.T) {
	const n = 256*kib + 7
	in, out := s.pinned(t, n), s.pinned(t, n)
	copy(in, pattern(20, n))
	d := s.malloc(t, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(in), cudart.HostToDevice))
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(out), cudart.DeviceMem(d, n), cudart.DeviceToHost))
	assert.True(t, bytes.Equal(in, out), "pinned -> device -> pinned changed the bytes")
}

// scheduleMask is cudaDeviceScheduleMask: the scheduling bits of the device
// flags.
const scheduleMask cudart.DeviceFlags = 0x07

func (s *suite) testHostAlloc(t *testing.T, ha cudart.HostAllocator) {
	t.Run("DeviceFlags", func(t *testing.T) {
		flags, err := ha.GetDeviceFlags(s.dev)
		require.NoError(t, err)
		// Setting flags on a device in use is refused by older drivers and
		// allowed by newer ones; either way the device stays usable. Only
		// the scheduling and map-host bits are passed back, the ones
		// cudaSetDeviceFlags accepts on every version.
		err = ha.SetDeviceFlags(s.dev, flags&(cudart.DeviceMapHost|scheduleMask))
		if err != nil {
			assert.ErrorIs(t, err, cudart.ErrSetOnActiveProcess)
		}
		_, err = ha.GetDeviceFlags(s.dev)
		assert.NoError(t, err)
		assert.ErrorIs(t, ha.SetDeviceFlags(s.dev, 0x100), cudart.ErrInvalidValue, "a bit outside cudaDeviceMask")
	})
	const n = 64*kib + 1
	for flags := cudart.HostAllocFlags(0); flags <= cudart.HostAllocPortable|cudart.HostAllocMapped|cudart.HostAllocWriteCombined; flags++ {
		t.Run(flags.String(), func(t *testing.T) {
			b, err := ha.HostAlloc(s.dev, n, flags)
			require.NoError(t, err)
			require.Len(t, b, n)
			once(t, calls.FreeHost, func() error { return s.rt.FreeHost(b) })
			want := pattern(uint64(30+flags), n)
			copy(b, want)
			assert.True(t, bytes.Equal(want, b), "host memory does not hold what was written")
			if flags&cudart.HostAllocMapped != 0 {
				s.checkMappedAliases(t, ha, b)
			}
		})
	}
}

// checkMappedAliases checks that mapped host memory b has a device address
// through which device calls see and change the same bytes.
func (s *suite) checkMappedAliases(t *testing.T, ha cudart.HostAllocator, b []byte) {
	t.Helper()
	n := uint64(len(b))
	dp, err := ha.HostGetDevicePointer(s.dev, b)
	require.NoError(t, err, "mapped host memory has a device pointer")
	require.NotZero(t, dp)
	seen := make([]byte, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(seen), cudart.DeviceMem(dp, n), cudart.Default))
	assert.True(t, bytes.Equal(b, seen), "the device pointer reads the host bytes")
	require.NoError(t, s.rt.Memset(s.dev, dp, 0x5a, n))
	require.NoError(t, s.rt.DeviceSynchronize(s.dev))
	assert.Equal(t, -1, filled(b, 0x5a), "a memset through the device pointer shows in the host slice")
}

func (s *suite) testHostRegister(t *testing.T, hr cudart.HostRegisterer) {
	const n = 64 * kib
	// Ordinary Go memory: CUDA 4.1 and later register any range, pinning
	// the pages that cover it.
	b := make([]byte, n)

	t.Run("RoundTrip", func(t *testing.T) {
		require.NoError(t, hr.HostRegister(s.dev, b, cudart.HostRegisterDefault))
		once(t, calls.HostUnregister, func() error { return hr.HostUnregister(s.dev, b) })
		copy(b, pattern(40, n))
		d := s.malloc(t, n)
		require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(b), cudart.HostToDevice))
		assert.True(t, bytes.Equal(b, s.read(t, d, n)), "registered -> device -> host changed the bytes")
	})
	t.Run("TwiceIsAlreadyRegistered", func(t *testing.T) {
		require.NoError(t, hr.HostRegister(s.dev, b, cudart.HostRegisterDefault))
		unregister := once(t, calls.HostUnregister, func() error { return hr.HostUnregister(s.dev, b) })
		err := hr.HostRegister(s.dev, b, cudart.HostRegisterDefault)
		assert.ErrorIs(t, err, cudart.ErrHostMemoryAlreadyRegistered)
		unregister()
		err = hr.HostUnregister(s.dev, b)
		assert.ErrorIs(t, err, cudart.ErrHostMemoryNotRegistered, "unregistering twice")
	})
	t.Run("NeverRegistered", func(t *testing.T) {
		err := hr.HostUnregister(s.dev, b)
		assert.ErrorIs(t, err, cudart.ErrHostMemoryNotRegistered)
	})
	t.Run("Mapped", func(t *testing.T) {
		ha := need[cudart.HostAllocator](t, s.rt)
		require.NoError(t, hr.HostRegister(s.dev, b, cudart.HostRegisterMapped))
		once(t, calls.HostUnregister, func() error { return hr.HostUnregister(s.dev, b) })
		copy(b, pattern(41, n))
		s.checkMappedAliases(t, ha, b)
	})
	t.Run("IoMemoryOnOrdinaryMemory", func(t *testing.T) {
		err := hr.HostRegister(s.dev, b, cudart.HostRegisterIoMemory)
		if err == nil {
			require.NoError(t, hr.HostUnregister(s.dev, b))
		}
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "cudaHostRegisterIoMemory on memory that is no device's I/O")
	})
	t.Run("ReadOnly", func(t *testing.T) {
		err := hr.HostRegister(s.dev, b, cudart.HostRegisterReadOnly)
		if err == nil {
			require.NoError(t, hr.HostUnregister(s.dev, b))
			return
		}
		assert.ErrorIs(t, err, cudart.ErrNotSupported, "read-only registration works or is not supported")
	})
	t.Run("AgainAfterUnregister", func(t *testing.T) {
		for i := range 2 {
			require.NoError(t, hr.HostRegister(s.dev, b, cudart.HostRegisterPortable), fmt.Sprintf("round %d", i))
			require.NoError(t, hr.HostUnregister(s.dev, b), fmt.Sprintf("round %d", i))
		}
	})
}
