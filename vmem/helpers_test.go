package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// g is the fake's allocation granularity in these tests: small, so that a
// test of many granules moves little data.
const g = 64 << 10

// newFake returns a leak-checked fake with granularity g.
func newFake(t testing.TB, opts ...cudarttest.Option) *cudarttest.Fake {
	t.Helper()
	return cudarttest.NewFakeT(t, append([]cudarttest.Option{cudarttest.WithGranularity(g)}, opts...)...)
}

// devices is n fake devices, each able to access every other's memory, as
// the GPUs of one NVLink host can: the peer tests need that, and the fake
// grants no peer access unless told.
func devices(n int) []cudarttest.Option {
	opts := []cudarttest.Option{cudarttest.WithDevices(n)}
	for a := range n {
		for b := a + 1; b < n; b++ {
			opts = append(opts, cudarttest.WithPeerAccess(a, b))
		}
	}
	return opts
}

// openCUDA returns real CUDA with at least n devices, each able to access
// the others' memory, or skips saying why.
func openCUDA(t testing.TB, n int) cudart.Library {
	t.Helper()
	lib, err := cudart.Open()
	if err != nil {
		t.Skipf("no CUDA: %v", err)
	}
	t.Cleanup(func() { _ = lib.Close() })
	count, err := lib.DeviceCount()
	if err != nil || count < n {
		t.Skipf("need %d CUDA devices: have %d (%v)", n, count, err)
	}
	if _, err := lib.MemGetAllocationGranularity(0, true); err != nil {
		t.Skipf("no CUDA virtual memory: %v", err)
	}
	for a := range n {
		for b := range n {
			if ok, err := lib.DeviceCanAccessPeer(a, b); a != b && !ok {
				t.Skipf("device %d cannot access device %d's memory (%v)", a, b, err)
			}
		}
	}
	return lib
}

// forEachRuntime runs fn on the fake and, where CUDA loads with n
// devices, on real CUDA, with the granularity each reports.
func forEachRuntime(t *testing.T, n int, fn func(t *testing.T, rt cudart.Full, gran uint64)) {
	t.Run("fake", func(t *testing.T) {
		fn(t, newFake(t, devices(n)...), g)
	})
	t.Run("cuda", func(t *testing.T) {
		lib := openCUDA(t, n)
		gran, err := lib.MemGetAllocationGranularity(0, true)
		require.NoError(t, err)
		fn(t, lib, gran)
	})
}

// pattern is n bytes that differ with seed and position.
func pattern(seed byte, n uint64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed ^ byte(i*7+i>>8)
	}
	return b
}

// put writes data at p on device, one granule-sized piece at a time, so that
// no copy spans two of a Vector's reservations.
func put(t testing.TB, rt cudart.Runtime, device int, p cudart.DevicePtr, data []byte, gran uint64) {
	t.Helper()
	for off := uint64(0); off < uint64(len(data)); off += gran {
		end := min(off+gran, uint64(len(data)))
		require.NoError(t, rt.Memcpy(device, cudart.DeviceMem(p.Add(off), end-off), cudart.HostMem(data[off:end]), cudart.HostToDevice))
	}
}

// get reads n bytes at p on device, as put writes them.
func get(t testing.TB, rt cudart.Runtime, device int, p cudart.DevicePtr, n, gran uint64) []byte {
	t.Helper()
	out := make([]byte, n)
	for off := uint64(0); off < n; off += gran {
		end := min(off+gran, n)
		require.NoError(t, rt.Memcpy(device, cudart.HostMem(out[off:end]), cudart.DeviceMem(p.Add(off), end-off), cudart.DeviceToHost))
	}
	return out
}
