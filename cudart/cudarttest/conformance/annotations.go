package conformance

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testAnnotations: the memory annotations check their arguments the same way
// on every runtime, whether or not a tool listens: heaps over device and
// pinned host memory, regions inside them that may overlap but not share a
// start, and every misuse an ErrInvalidValue that changes nothing.
func (s *suite) testAnnotations(t *testing.T, a cudart.Annotations) {
	t.Run("FreshThread", func(t *testing.T) { s.testAnnotationsOnAFreshThread(t, a) })
	const size = 64 << 10
	dev, err := s.rt.Malloc(s.dev, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.rt.Free(s.dev, dev)) }()
	host, err := s.rt.MallocHost(s.dev, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.rt.FreeHost(host)) }()

	hd, err := a.MemHeapRegister(s.dev, dev, size, "conformance device heap")
	require.NoError(t, err)
	devRegistered := true
	defer func() {
		if devRegistered {
			assert.NoError(t, a.MemHeapUnregister(hd))
		}
	}()
	hh, err := a.MemHeapRegister(s.dev, cudart.HostPtr(host), size, "conformance host heap")
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
		{"heap overlapping a heap", second(a.MemHeapRegister(s.dev, dev+4096, size, "x"))},
		{"empty heap", second(a.MemHeapRegister(s.dev, dev, 0, "x"))},
		{"heap at 0", second(a.MemHeapRegister(s.dev, 0, 16, "x"))},
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
	again, err := a.MemHeapRegister(s.dev, dev, size, "again")
	require.NoError(t, err, "an unregistered heap's range can be registered again")
	assert.NoError(t, a.MemHeapUnregister(again))
}

func second[T any](_ T, err error) error { return err }

// testAnnotationsOnAFreshThread: every annotation call succeeds from a
// goroutine locked to an OS thread on which the suite has made no CUDA
// call, where no context need be current: the runtime makes the heap's
// device current itself (under compute-sanitizer, CUDA refuses the call
// otherwise). A device that does not exist is refused with
// ErrInvalidDevice and registers nothing.
func (s *suite) testAnnotationsOnAFreshThread(t *testing.T, a cudart.Annotations) {
	const size = 64 << 10
	p, err := s.rt.Malloc(s.dev, size)
	if err != nil {
		t.Fatalf("%s: %v", calls.Malloc, err)
	}
	defer func() {
		if err := s.rt.Free(s.dev, p); err != nil {
			t.Errorf("%s: %v", calls.Free, err)
		}
	}()
	count, err := s.rt.DeviceCount()
	if err != nil {
		t.Fatalf("%s: %v", calls.GetDeviceCount, err)
	}
	done := make(chan error)
	go func() {
		// Never unlocked: the thread ends with the goroutine, so the
		// context made current on it is nobody else's.
		runtime.LockOSThread()
		done <- annotateAll(a, s.dev, count, p, size)
	}()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// annotateAll makes every annotation call once on the calling thread, and
// refuses a heap on device count, which does not exist.
func annotateAll(a cudart.Annotations, dev, count int, p cudart.DevicePtr, size uint64) error {
	if a.AnnotationsEnabled(count) {
		return fmt.Errorf("AnnotationsEnabled(%d) of %d devices is true", count, count)
	}
	if _, err := a.MemHeapRegister(count, p, size, "no such device"); !errors.Is(err, cudart.ErrInvalidDevice) {
		return fmt.Errorf("MemHeapRegister on device %d of %d: got %v, want ErrInvalidDevice", count, count, err)
	}
	a.AnnotationsEnabled(dev)
	h, err := a.MemHeapRegister(dev, p, size, "fresh thread heap")
	if err != nil {
		return fmt.Errorf("MemHeapRegister after a refused one over the same range: %w", err)
	}
	buf := cudart.MemRegion{Addr: p, Size: 4096, Name: "fresh thread buffer"}
	steps := []struct {
		name string
		call func() error
	}{
		{"MemRegionsRegister", func() error { return a.MemRegionsRegister(h, []cudart.MemRegion{buf}) }},
		{"MemRegionsName", func() error { return a.MemRegionsName(h, []cudart.MemRegion{{Addr: p, Name: "renamed"}}) }},
		{"MemRegionsUnregister", func() error { return a.MemRegionsUnregister(h, []cudart.DevicePtr{p}) }},
		{"MemRegionsRegister again", func() error { return a.MemRegionsRegister(h, []cudart.MemRegion{buf}) }},
		{"MemHeapReset", func() error { return a.MemHeapReset(h) }},
		{"MemHeapUnregister", func() error { return a.MemHeapUnregister(h) }},
	}
	for _, st := range steps {
		if err := st.call(); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", st.name, err), a.MemHeapUnregister(h))
		}
	}
	return nil
}
