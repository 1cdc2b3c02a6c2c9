package conformance

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testAnnotations: the memory annotations check their arguments the same way
// on every runtime, whether or not a tool listens: heaps over device and
// pinned host memory, regions inside them that may overlap but not share a
// start, and every misuse an ErrInvalidValue that changes nothing.
func (s *suite) testAnnotations(t *testing.T) {
	a, ok := s.rt.(cudart.Annotations)
	if !ok {
		t.Skip("runtime has no annotations")
	}
	const size = 64 << 10
	dev, err := s.rt.Malloc(s.dev, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.rt.Free(s.dev, dev)) }()
	host, err := s.rt.MallocHost(s.dev, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.rt.FreeHost(host)) }()

	hd, err := a.MemHeapRegister(dev, size, "conformance device heap")
	require.NoError(t, err)
	devRegistered := true
	defer func() {
		if devRegistered {
			assert.NoError(t, a.MemHeapUnregister(hd))
		}
	}()
	hh, err := a.MemHeapRegister(cudart.HostPtr(host), size, "conformance host heap")
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.MemHeapUnregister(hh)) }()
	assert.NotEqual(t, hd, hh)

	require.NoError(t, a.MemRegionsRegister(hd, []cudart.MemRegion{
		{Addr: dev, Size: 4096, Name: "a"},
		{Addr: dev + 256, Size: 256, Name: "inside a"},
		{Addr: dev + 8192, Size: 100},
	}))
	require.NoError(t, a.MemRegionsRegister(hh, []cudart.MemRegion{{Addr: cudart.HostPtr(host), Size: size, Name: "all of it"}}))
	require.NoError(t, a.MemRegionsName(hd, []cudart.MemRegion{{Addr: dev + 8192, Name: "named later"}}))

	for _, tc := range []struct {
		name string
		err  error
	}{
		{"heap overlapping a heap", second(a.MemHeapRegister(dev+4096, size, "x"))},
		{"empty heap", second(a.MemHeapRegister(dev, 0, "x"))},
		{"heap at 0", second(a.MemHeapRegister(0, 16, "x"))},
		{"region outside its heap", a.MemRegionsRegister(hd, []cudart.MemRegion{{Addr: dev + size - 8, Size: 16}})},
		{"region in another heap", a.MemRegionsRegister(hh, []cudart.MemRegion{{Addr: dev + 16384, Size: 16}})},
		{"empty region", a.MemRegionsRegister(hd, []cudart.MemRegion{{Addr: dev + 16384}})},
		{"shared start", a.MemRegionsRegister(hd, []cudart.MemRegion{{Addr: dev, Size: 16}})},
		{"unregister a start that is none", a.MemRegionsUnregister(hd, []cudart.DevicePtr{dev + 1})},
		{"one good, one bad", a.MemRegionsUnregister(hd, []cudart.DevicePtr{dev, dev + 1})},
		{"name a start that is none", a.MemRegionsName(hd, []cudart.MemRegion{{Addr: dev + 1, Name: "x"}})},
		{"unknown heap", a.MemHeapReset(hd + hh + 1)},
		{"zero heap", a.MemRegionsRegister(0, []cudart.MemRegion{{Addr: dev, Size: 1}})},
	} {
		assert.ErrorIs(t, tc.err, cudart.ErrInvalidValue, tc.name)
	}
	// The refused unregister of {dev, dev+1} left dev registered.
	require.NoError(t, a.MemRegionsUnregister(hd, []cudart.DevicePtr{dev, dev + 256}))
	require.NoError(t, a.MemHeapReset(hd))
	require.NoError(t, a.MemRegionsRegister(hd, []cudart.MemRegion{{Addr: dev, Size: 16}}), "a reset heap has room again")
	require.NoError(t, a.MemHeapUnregister(hd))
	devRegistered = false
	assert.ErrorIs(t, a.MemHeapUnregister(hd), cudart.ErrInvalidValue, "twice")
	again, err := a.MemHeapRegister(dev, size, "again")
	require.NoError(t, err, "an unregistered heap's range can be registered again")
	assert.NoError(t, a.MemHeapUnregister(again))
}

func second[T any](_ T, err error) error { return err }
