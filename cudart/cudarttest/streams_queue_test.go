package cudarttest_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// queueEnv is what the stream-order tests work on: device memory d and d2
// holding old bytes, pinned host memory host holding old bytes and src
// holding the new ones, and a created stream s.
type queueEnv struct {
	f         *cudarttest.Fake
	d, d2     cudart.DevicePtr
	host, src []byte
	s         cudart.Stream
}

const queueBytes = 4 * kib

var (
	oldBytes = bytes.Repeat([]byte{0x11}, queueBytes)
	newBytes = bytes.Repeat([]byte{0x5a}, queueBytes)
)

func newQueueEnv(t *testing.T, opts ...cudarttest.Option) queueEnv {
	t.Helper()
	f := cudarttest.NewFakeT(t, opts...)
	e := queueEnv{f: f, d: mustMalloc(t, f, queueBytes), d2: mustMalloc(t, f, queueBytes)}
	for _, p := range []cudart.DevicePtr{e.d, e.d2} {
		require.NoError(t, f.Memcpy(0, dmem(p), cudart.HostMem(oldBytes), cudart.HostToDevice))
	}
	e.host, e.src = mustMallocHost(t, f, oldBytes), mustMallocHost(t, f, newBytes)
	var err error
	e.s, err = f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.StreamDestroy(0, e.s)) })
	return e
}

func dmem(p cudart.DevicePtr) cudart.Mem { return cudart.DeviceMem(p, queueBytes) }

// mustMallocHost is pinned host memory holding a copy of b, freed at
// cleanup.
func mustMallocHost(t *testing.T, f *cudarttest.Fake, b []byte) []byte {
	t.Helper()
	h, err := f.MallocHost(0, uint64(len(b)))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(h)) })
	copy(h, b)
	return h
}

// TestAsyncWorkTakesEffectAtSynchronisation: async work leaves memory as it
// was until a synchronisation point runs it, and then in stream order.
// Each case's work ends in a copy to pinned host memory, which the test
// reads without synchronising.
func TestAsyncWorkTakesEffectAtSynchronisation(t *testing.T) {
	streamSync := func(e queueEnv) error { return e.f.StreamSynchronize(0, e.s) }
	deviceSync := func(e queueEnv) error { return e.f.DeviceSynchronize(0) }
	roundTrip := func(e queueEnv) error {
		if err := e.f.MemcpyAsync(0, dmem(e.d), cudart.HostMem(e.src), cudart.HostToDevice, e.s); err != nil {
			return err
		}
		return e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s)
	}
	tests := []struct {
		name  string
		issue func(e queueEnv) error
		sync  func(e queueEnv) error
	}{
		{"MemcpyAsync there and back, StreamSynchronize", roundTrip, streamSync},
		{"MemcpyAsync there and back, DeviceSynchronize", roundTrip, deviceSync},
		{"Memset of device memory, then a blocking stream waits for it", func(e queueEnv) error {
			if err := e.f.Memset(0, e.d, newBytes[0], queueBytes); err != nil {
				return err
			}
			return e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s)
		}, streamSync},
		{"Memset of device memory on the legacy stream", func(e queueEnv) error {
			if err := e.f.Memset(0, e.d, newBytes[0], queueBytes); err != nil {
				return err
			}
			return e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, 0)
		}, func(e queueEnv) error { return e.f.StreamSynchronize(0, 1) }}, // cudaStreamLegacy
		{"device-to-device Memcpy waits for the stream and is waited for", func(e queueEnv) error {
			if err := e.f.MemcpyAsync(0, dmem(e.d2), cudart.HostMem(e.src), cudart.HostToDevice, e.s); err != nil {
				return err
			}
			if err := e.f.Memcpy(0, dmem(e.d), dmem(e.d2), cudart.DeviceToDevice); err != nil {
				return err
			}
			return e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s)
		}, streamSync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newQueueEnv(t)
			require.NoError(t, tt.issue(e))
			assert.Equal(t, oldBytes, e.host, "read before a synchronisation")
			require.NoError(t, tt.sync(e))
			assert.Equal(t, newBytes, e.host, "read after the synchronisation")
		})
	}
}

// TestMemsetRunsInIssueOrder: a copy issued before a memset reads the bytes
// from before it, so the memset did not take effect when issued.
func TestMemsetRunsInIssueOrder(t *testing.T) {
	e := newQueueEnv(t)
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s))
	require.NoError(t, e.f.Memset(0, e.d, newBytes[0], queueBytes))
	require.NoError(t, e.f.DeviceSynchronize(0))
	assert.Equal(t, oldBytes, e.host, "the copy ran first")
	got := make([]byte, queueBytes)
	require.NoError(t, e.f.Memcpy(0, cudart.HostMem(got), dmem(e.d), cudart.DeviceToHost))
	assert.Equal(t, newBytes, got, "then the memset")
}

// TestPageableHostMemoryIsCopiedAtOnce: CUDA reads a pageable source before
// cudaMemcpyAsync returns and writes a pageable destination before it
// returns, so neither needs a synchronisation and a change to the source
// after the call does not reach the device.
func TestPageableHostMemoryIsCopiedAtOnce(t *testing.T) {
	e := newQueueEnv(t)
	pageable := bytes.Clone(newBytes)
	require.NoError(t, e.f.MemcpyAsync(0, dmem(e.d), cudart.HostMem(pageable), cudart.HostToDevice, e.s))
	clear(pageable)
	out := make([]byte, queueBytes)
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(out), dmem(e.d), cudart.DeviceToHost, e.s))
	assert.Equal(t, newBytes, out, "written before the call returned, after the stream's earlier work")
}

func TestPrefetchTakesEffectAtSynchronisation(t *testing.T) {
	tests := []struct {
		name string
		sync func(f *cudarttest.Fake, s cudart.Stream) error
	}{
		{"StreamSynchronize", func(f *cudarttest.Fake, s cudart.Stream) error { return f.StreamSynchronize(0, s) }},
		{"DeviceSynchronize", func(f *cudarttest.Fake, _ cudart.Stream) error { return f.DeviceSynchronize(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newQueueEnv(t)
			p, err := e.f.MallocManaged(0, mib, cudart.MemAttachGlobal)
			require.NoError(t, err)
			defer func() { require.NoError(t, e.f.Free(0, p)) }()
			require.NoError(t, e.f.MemPrefetchAsync(0, p, mib, cudart.CPUDevice, e.s))
			_, ok := e.f.PrefetchedTo(p)
			assert.False(t, ok, "before a synchronisation")
			require.NoError(t, tt.sync(e.f, e.s))
			to, ok := e.f.PrefetchedTo(p)
			assert.True(t, ok, "after the synchronisation")
			assert.Equal(t, cudart.CPUDevice, to)
		})
	}
}

// TestFailAsyncIsStickyAndTheResetLosesTheDevice: the synchronisation that
// runs the faulting work returns the injected code, every later call on the
// device does too; DeviceReset then succeeds and frees what the device held,
// but leaves it lost, as on a GPU: every call that needs its context
// returns cudaErrorDevicesUnavailable, a second reset too, and so do the
// calls that name no device. Calls that need no context work, another
// device is untouched, and a new Fake (a new process) works.
func TestFailAsyncIsStickyAndTheResetLosesTheDevice(t *testing.T) {
	syncs := []struct {
		name string
		sync func(f *cudarttest.Fake, p cudart.DevicePtr) error
	}{
		{"StreamSynchronize", func(f *cudarttest.Fake, _ cudart.DevicePtr) error { return f.StreamSynchronize(0, 0) }},
		{"DeviceSynchronize", func(f *cudarttest.Fake, _ cudart.DevicePtr) error { return f.DeviceSynchronize(0) }},
		{"Memcpy to the host", func(f *cudarttest.Fake, p cudart.DevicePtr) error {
			return f.Memcpy(0, cudart.HostMem(make([]byte, 16)), cudart.DeviceMem(p, 16), cudart.DeviceToHost)
		}},
		{"Free", func(f *cudarttest.Fake, p cudart.DevicePtr) error { return f.Free(0, p) }},
		{"StreamQuery, which runs the work at the second", func(f *cudarttest.Fake, _ cudart.DevicePtr) error {
			if done, err := f.StreamQuery(0, 0); done || err != nil {
				return fmt.Errorf("the first query: done %v, %w", done, err)
			}
			_, err := f.StreamQuery(0, 0)
			return err
		}},
	}
	for _, code := range []cudart.Code{700, 714, 715, 716, 717, 718, 719} {
		for _, sc := range syncs {
			t.Run(cudart.NewError("", code).Name+"/"+sc.name, func(t *testing.T) {
				f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2), cudarttest.WithDeviceMemory(64*mib))
				want := cudart.NewError("", code)
				p, err := f.Malloc(0, mib)
				require.NoError(t, err)
				_, err = f.MallocHost(0, kib)
				require.NoError(t, err)
				require.NoError(t, f.FailAsync(0, code))
				require.NoError(t, f.Memset(0, p, 1, mib), "queued: the fault shows when it runs")

				err = sc.sync(f, p)
				require.ErrorIs(t, err, want)
				var ce *cudart.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, code, ce.Code)
				for name, err := range deviceCalls(f, 0, p) {
					assert.ErrorIs(t, err, want, "%s after the fault", name)
				}
				q, err := f.Malloc(1, mib)
				require.NoError(t, err, "device 1 has its own context")
				require.NoError(t, f.Free(1, q))

				require.NoError(t, f.DeviceReset(0))
				assert.True(t, f.Live().Empty(), "the reset freed everything: %v", f.CheckLeaks())
				calls := deviceCalls(f, 0, p)
				calls["DeviceReset"] = f.DeviceReset(0)
				calls["FreeHost"] = f.FreeHost(make([]byte, 1))
				calls["MemAddressReserve"] = func() error { _, err := f.MemAddressReserve(2*mib, 0, 0); return err }()
				for name, err := range calls {
					assert.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "%s after the reset", name)
				}
				assert.ErrorContains(t, calls["Malloc"], "device 0 is lost: it was reset after the fatal fault "+want.Name)
				assert.Equal(t, uint64(1), f.DeviceResets(0), "the refused reset is not counted")
				n, err := f.DeviceCount()
				require.NoError(t, err, "no context needed")
				assert.Equal(t, 2, n)
				_, err = f.RuntimeVersion()
				require.NoError(t, err, "no context needed")
				_, err = f.DriverVersion()
				require.NoError(t, err, "no context needed")
				_, err = f.DeviceCanAccessPeer(0, 1)
				require.NoError(t, err, "no context needed")
				q, err = f.Malloc(1, mib)
				require.NoError(t, err, "device 1 still works")
				require.NoError(t, f.Free(1, q))

				g := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(64*mib))
				p, err = g.Malloc(0, queueBytes)
				require.NoError(t, err)
				require.NoError(t, g.Memcpy(0, dmem(p), cudart.HostMem(newBytes), cudart.HostToDevice))
				got := make([]byte, queueBytes)
				require.NoError(t, g.Memcpy(0, cudart.HostMem(got), dmem(p), cudart.DeviceToHost))
				assert.Equal(t, newBytes, got, "a new process works")
				require.NoError(t, g.Free(0, p))
			})
		}
	}
}

// deviceCalls makes calls on device of f that need its context, p being
// memory allocated there, and returns what each returned.
func deviceCalls(f *cudarttest.Fake, device int, p cudart.DevicePtr) map[string]error {
	return map[string]error{
		"DeviceSynchronize": f.DeviceSynchronize(device),
		"Malloc":            func() error { _, err := f.Malloc(device, 1); return err }(),
		"Memset":            f.Memset(device, p, 2, 16),
		"StreamCreate":      func() error { _, err := f.StreamCreate(device); return err }(),
		"MemGetInfo":        func() error { _, _, err := f.MemGetInfo(device); return err }(),
		"Free":              f.Free(device, p),
		"HostRegister":      f.HostRegister(device, make([]byte, 4096), 0),
	}
}

func TestFailAsyncRefusesMistakes(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	assert.ErrorContains(t, f.FailAsync(1, 700), "no device 1")
	assert.ErrorContains(t, f.FailAsync(0, 2), "want a code CUDA makes sticky")
	p := mustMalloc(t, f, 16)
	require.NoError(t, f.Memset(0, p, 1, 16))
	require.NoError(t, f.DeviceSynchronize(0), "a refused fault is not installed")
}

// TestOtherDevicesStreamRunsInItsQueue: a copy issued with device 0 current
// on a stream of device 1 is device 1's work, as in CUDA: device 0's
// synchronisation does not run it, device 1's does.
func TestOtherDevicesStreamRunsInItsQueue(t *testing.T) {
	e := newQueueEnv(t, cudarttest.WithDevices(2))
	s1, err := e.f.StreamCreate(1)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.f.StreamDestroy(1, s1)) }()
	require.NoError(t, e.f.MemcpyAsync(0, dmem(e.d), cudart.HostMem(e.src), cudart.HostToDevice, s1))
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, s1))
	require.NoError(t, e.f.DeviceSynchronize(0))
	assert.Equal(t, oldBytes, e.host, "device 0's synchronisation leaves device 1's queue")
	require.NoError(t, e.f.StreamSynchronize(0, s1))
	assert.Equal(t, newBytes, e.host, "synchronising the stream runs it, whichever device is named")
}

func TestOverlappingHostCopiesAreRefused(t *testing.T) {
	buf := make([]byte, 64)
	tests := []struct {
		name     string
		dst, src []byte
		ok       bool
	}{
		{"the same bytes", buf[:32], buf[:32], false},
		{"destination after the source, overlapping", buf[16:48], buf[:32], false},
		{"destination before the source, overlapping", buf[:32], buf[31:63], false},
		{"adjacent", buf[32:], buf[:32], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			for i := range buf {
				buf[i] = byte(i)
			}
			before := bytes.Clone(buf)
			errs := map[string]error{
				"Memcpy":      f.Memcpy(0, cudart.HostMem(tt.dst), cudart.HostMem(tt.src), cudart.HostToHost),
				"MemcpyAsync": f.MemcpyAsync(0, cudart.HostMem(tt.dst), cudart.HostMem(tt.src), cudart.Default, 0),
			}
			for name, err := range errs {
				if tt.ok {
					assert.NoError(t, err, name)
					continue
				}
				assert.ErrorIs(t, err, cudart.ErrInvalidValue, name)
				assert.ErrorContains(t, err, "overlap", name)
			}
			if !tt.ok {
				assert.Equal(t, before, buf, "a refused copy writes nothing")
			}
		})
	}
}

// TestHeapCountsAgainstFreeMemory: a malloc heap beyond the 8 MiB every
// context has is device memory, in whole 2 MiB pages.
func TestHeapCountsAgainstFreeMemory(t *testing.T) {
	tests := []struct {
		heap, charge uint64
	}{
		{mib, 0},
		{8 * mib, 0},
		{8*mib + 1, 2 * mib},
		{64 * mib, 56 * mib},
		{8 * mib, 0},
	}
	f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(64*mib))
	_, total, err := f.MemGetInfo(0)
	require.NoError(t, err)
	for _, tt := range tests {
		require.NoError(t, f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, tt.heap))
		free, _, err := f.MemGetInfo(0)
		require.NoError(t, err)
		assert.Equal(t, tt.charge, total-free, "a heap of %d B", tt.heap)
	}
	require.NoError(t, f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 16*mib))
	err = f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 80*mib)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation, "more than the device has free")
	heap, err := f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	assert.Equal(t, uint64(16*mib), heap, "a refused limit changes nothing")
	free, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(8*mib), total-free, "nor the charge")
	require.NoError(t, f.DeviceReset(0))
	free, _, err = f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, total, free, "the reset gives the heap back")
}

func TestSetDeviceFlagsRefusesInvalidBits(t *testing.T) {
	tests := []struct {
		name  string
		flags cudart.DeviceFlags
		ok    bool
	}{
		{"map host and spin", cudart.DeviceMapHost | 1, true},
		{"blocking sync", 4, true},
		{"local memory resize to max", 0x10, true},
		{"sync memops", 0x80, true},
		{"a bit CUDA does not define", 0x100, false},
		{"two scheduling policies", 1 | 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			before, err := f.GetDeviceFlags(0)
			require.NoError(t, err)
			err = f.SetDeviceFlags(0, tt.flags)
			got, gerr := f.GetDeviceFlags(0)
			require.NoError(t, gerr)
			if tt.ok {
				require.NoError(t, err)
				assert.Equal(t, tt.flags, got)
				return
			}
			assert.ErrorIs(t, err, cudart.ErrInvalidValue)
			assert.Equal(t, before, got, "refused flags change nothing")
		})
	}
}

func TestPeerAccessIsWhatWithPeerAccessDeclares(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(3), cudarttest.WithPeerAccess(0, 2))
	for _, tt := range []struct {
		device, peer int
		want         bool
	}{{0, 2, true}, {2, 0, true}, {0, 1, false}, {1, 2, false}, {0, 0, false}} {
		can, err := f.DeviceCanAccessPeer(tt.device, tt.peer)
		require.NoError(t, err)
		assert.Equal(t, tt.want, can, "device %d to device %d", tt.device, tt.peer)
	}
	_, err := f.DeviceCanAccessPeer(0, 3)
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice)
}

func TestPinningLimitCountsHostRegister(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithHostMemory(mib))
	mustMallocHost(t, f, make([]byte, mib/2))
	err := f.HostRegister(0, make([]byte, mib), cudart.HostRegisterDefault)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation, "half is pinned already")
	b := make([]byte, mib/2)
	require.NoError(t, f.HostRegister(0, b, cudart.HostRegisterDefault))
	_, err = f.MallocHost(0, 1)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation, "registered memory counts too")
	require.NoError(t, f.HostUnregister(0, b))
}
