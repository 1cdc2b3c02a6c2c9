package cudarttest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

const probePTX = `
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);
.visible .entry probe(.param .u64 p, .param .u64 n) { ret; }
.visible .entry other() { ret; }
`

// loadProbe registers probe as fn on f and returns its function.
func loadProbe(t *testing.T, f *cudarttest.Fake, fn cudarttest.KernelFunc) cudart.Function {
	t.Helper()
	f.RegisterKernel("probe", fn)
	m, err := f.ModuleLoadData(0, probePTX)
	require.NoError(t, err)
	resets := f.DeviceResets(0)
	t.Cleanup(func() {
		if f.DeviceResets(0) == resets { // else the reset unloaded it
			assert.NoError(t, f.ModuleUnload(0, m))
		}
	})
	k, err := f.ModuleGetFunction(0, m, "probe")
	require.NoError(t, err)
	return k
}

func launch(f *cudarttest.Fake, fn cudart.Function, p cudart.DevicePtr, n uint64) error {
	return f.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(p), cudart.Arg(n))
}

func TestFakeKernelNeedsRegistration(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	m, err := f.ModuleLoadData(0, probePTX)
	require.NoError(t, err)
	_, err = f.ModuleGetFunction(0, m, "other")
	assert.ErrorIs(t, err, cudart.ErrNotFound)
	assert.ErrorContains(t, err, `no Go implementation of kernel "other": call RegisterKernel first`)
	_, err = f.ModuleGetFunction(0, m, "nope")
	assert.ErrorContains(t, err, `no .entry "nope"; it has other, probe`)
	_, err = f.ModuleGetFunction(1, m, "probe")
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice)
	require.NoError(t, f.ModuleUnload(0, m))
	assert.ErrorIs(t, f.ModuleUnload(0, m), cudart.ErrInvalidResourceHandle)
	_, err = f.ModuleLoadData(0, ".version 8.0\n.target sm_80\n.entry k(.param x) {}")
	assert.ErrorIs(t, err, cudart.ErrInvalidPTX)
	assert.ErrorContains(t, err, "PTX line 3: .entry k: parameter 1: no type")
}

// TestFakeKernelFaults: a kernel that faults makes the launch's
// synchronisation fail, and every later call, with the fault's code until
// DeviceReset, which leaves the device lost; a new Fake works.
func TestFakeKernelFaults(t *testing.T) {
	cases := []struct {
		name string
		fn   cudarttest.KernelFunc
		as   error
		want string
	}{
		{"write past the allocation", func(k *cudarttest.KernelContext) error {
			k.Write(k.Ptr(0).Add(k.Uint64(1)-2), []byte{1, 2, 3, 4})
			return nil
		}, cudart.ErrIllegalAddress, "kernel probe writes 4 bytes at"},
		{"argument read at the wrong size", func(k *cudarttest.KernelContext) error {
			_ = k.Uint32(1)
			return nil
		}, cudart.ErrLaunchFailure, "kernel probe reads argument 1, uint64(64), as 4 bytes"},
		{"argument out of range", func(k *cudarttest.KernelContext) error {
			_ = k.Float64(2)
			return nil
		}, cudart.ErrLaunchFailure, "kernel probe reads argument 2 of 2"},
		{"free of memory not from malloc", func(k *cudarttest.KernelContext) error {
			k.Free(k.Ptr(0))
			return nil
		}, cudart.ErrIllegalAddress, "which device-side malloc did not return"},
		{"an error", func(*cudarttest.KernelContext) error { return assert.AnError }, cudart.ErrLaunchFailure, assert.AnError.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			p, err := f.Malloc(0, 64)
			require.NoError(t, err)
			noop := func(*cudarttest.KernelContext) error { return nil }
			fn := loadProbe(t, f, c.fn)
			ok := loadProbe(t, f, noop)
			require.NoError(t, launch(f, fn, p, 64), "the launch is queued")
			err = f.DeviceSynchronize(0)
			assert.ErrorIs(t, err, c.as)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorIs(t, launch(f, ok, p, 64), c.as, "the fault is sticky")
			require.NoError(t, f.DeviceReset(0), "it frees p too")
			assert.Equal(t, uint64(1), f.DeviceResets(0))
			assert.ErrorIs(t, launch(f, ok, p, 64), cudart.ErrDevicesUnavailable, "the fault was fatal: the reset leaves the device lost")
			_, err = f.Malloc(0, 64)
			assert.ErrorIs(t, err, cudart.ErrDevicesUnavailable)

			g := cudarttest.NewFakeT(t)
			p, err = g.Malloc(0, 64)
			require.NoError(t, err)
			ok = loadProbe(t, g, noop)
			require.NoError(t, launch(g, ok, p, 64))
			assert.NoError(t, g.DeviceSynchronize(0), "a new process works")
			require.NoError(t, g.Free(0, p))
		})
	}
}

func TestFakeMallocHeap(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	out, err := f.Malloc(0, 8)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, out)) }()
	var got []cudart.DevicePtr
	fn := loadProbe(t, f, func(k *cudarttest.KernelContext) error {
		got = append(got, k.Malloc(k.Uint64(1)))
		return nil
	})
	require.NoError(t, launch(f, fn, out, 6<<20))
	require.NoError(t, launch(f, fn, out, 3<<20))
	require.NoError(t, f.DeviceSynchronize(0))
	assert.NotZero(t, got[0], "6 MiB of the default 8 MiB heap")
	assert.Zero(t, got[1], "3 MiB more do not fit")
	assert.ErrorContains(t, f.CheckLeaks(), "from cuLaunchKernel", "device-side memory not freed shows as a leak")

	err = f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 64<<20)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue)
	assert.ErrorContains(t, err, "the malloc heap of device 0 is fixed: a kernel that calls malloc has run")
	require.NoError(t, f.DeviceSetLimit(0, cudart.LimitStackSize, 4<<10), "other limits still change")

	free := loadProbe(t, f, func(k *cudarttest.KernelContext) error {
		k.Free(got[0])
		got = append(got, k.Malloc(7<<20))
		k.Free(got[2])
		return nil
	})
	require.NoError(t, launch(f, free, out, 0))
	require.NoError(t, f.DeviceSynchronize(0))
	assert.NotZero(t, got[2], "the heap has room once freed")
	assert.NotContains(t, f.CheckLeaks().Error(), "cuLaunchKernel", "all device-side memory was freed")
}

// TestFakeMallocHeapPerDevice: each device has its own heap. A kernel on
// device 1 that frees memory from device 0's heap, which CUDA leaves
// undefined, faults; device 0's heap keeps the memory until a kernel of
// device 0 frees it.
func TestFakeMallocHeapPerDevice(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	var kept []cudart.DevicePtr
	f.RegisterKernel("probe", func(k *cudarttest.KernelContext) error {
		if n := k.Uint64(1); n > 0 {
			kept = append(kept, k.Malloc(n))
		} else {
			k.Free(kept[0])
		}
		return nil
	})
	fns := make([]cudart.Function, 2)
	for d := range fns {
		m, err := f.ModuleLoadData(d, probePTX)
		require.NoError(t, err)
		if d == 0 {
			defer func() { assert.NoError(t, f.ModuleUnload(0, m)) }()
		}
		fns[d], err = f.ModuleGetFunction(d, m, "probe")
		require.NoError(t, err)
	}
	run := func(d int, n uint64) error {
		if err := f.LaunchKernel(d, fns[d], cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg[cudart.DevicePtr](0), cudart.Arg(n)); err != nil {
			return err
		}
		return f.DeviceSynchronize(d)
	}
	require.NoError(t, run(0, 6<<20))
	require.NotZero(t, kept[0], "6 MiB of device 0's 8 MiB heap")

	err := run(1, 0)
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress, "a kernel on device 1 frees device 0's heap memory")
	assert.ErrorContains(t, err, "kernel probe on device 1 frees 0x")
	assert.ErrorContains(t, err, "from the malloc heap of device 0")
	require.NoError(t, f.DeviceReset(1))

	require.NoError(t, run(0, 6<<20))
	assert.Zero(t, kept[1], "device 0's heap still holds the first 6 MiB")
	require.NoError(t, run(0, 0), "device 0's kernel frees it")
	require.NoError(t, run(0, 6<<20))
	assert.NotZero(t, kept[2], "device 0's heap has the 6 MiB back")
	kept[0] = kept[2]
	require.NoError(t, run(0, 0))
}

func TestFakeCaptureDefersWork(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := f.Malloc(0, 4)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, p)) }()
	runs := 0
	fn := loadProbe(t, f, func(k *cudarttest.KernelContext) error {
		runs++
		k.Write(k.Ptr(0), []byte{byte(runs)})
		return nil
	})
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.StreamDestroy(0, s)) }()
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	assert.ErrorIs(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed), cudart.ErrStreamCaptureUnsupported, "capturing already")
	require.NoError(t, f.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(1), 0, s, cudart.Arg(p), cudart.Arg[uint64](0)))
	assert.Zero(t, runs, "captured, not run")
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(0, g))
	assert.ErrorIs(t, f.GraphDestroy(0, g), cudart.ErrInvalidResourceHandle)
	for range 3 {
		require.NoError(t, f.GraphLaunch(0, x, s))
	}
	require.NoError(t, f.StreamSynchronize(0, s))
	assert.Equal(t, 3, runs)
	_, err = f.GraphInstantiate(1, g)
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice)
	require.NoError(t, f.GraphExecDestroy(0, x))
	assert.ErrorIs(t, f.GraphLaunch(0, x, s), cudart.ErrInvalidResourceHandle)
	assert.ErrorIs(t, f.StreamBeginCapture(0, 0, cudart.CaptureModeGlobal), cudart.ErrStreamCaptureUnsupported, "the legacy stream cannot capture")
	assert.ErrorIs(t, f.StreamBeginCapture(0, s, 5), cudart.ErrInvalidValue)
	_, err = f.StreamEndCapture(0, s)
	assert.ErrorIs(t, err, cudart.ErrStreamCaptureUnmatched)
}

// TestFakeElapsedTimeCountsCalls: one FakeEventTick per call between the
// completions of the two events, which are the synchronisations that run
// their records.
func TestFakeElapsedTimeCountsCalls(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	a, err := f.EventCreate(0)
	require.NoError(t, err)
	b, err := f.EventCreate(0)
	require.NoError(t, err)
	_, err = f.EventElapsedTime(0, a, b)
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "never recorded")
	require.NoError(t, f.EventRecord(0, a, 0))
	require.NoError(t, f.EventSynchronize(0, a))
	_, _, _ = f.MemGetInfo(0)
	_, _ = f.DeviceCount()
	require.NoError(t, f.EventRecord(0, b, 0))
	_, err = f.EventElapsedTime(0, a, b)
	assert.ErrorIs(t, err, cudart.ErrNotReady, "b's record is queued until a synchronisation")
	require.NoError(t, f.EventSynchronize(0, b))
	d, err := f.EventElapsedTime(0, a, b)
	require.NoError(t, err)
	assert.Equal(t, 5*cudarttest.FakeEventTick, d, "the calls after a's completion up to b's")
	assert.Equal(t, 5*time.Microsecond, d)
	d, err = f.EventElapsedTime(0, b, a)
	require.NoError(t, err)
	assert.Equal(t, -5*time.Microsecond, d, "the end before the start")
	assert.ErrorIs(t, f.EventRecord(1, a, 0), cudart.ErrInvalidResourceHandle, "an event of another device")
	require.NoError(t, f.EventDestroy(0, a))
	assert.ErrorIs(t, f.EventSynchronize(0, a), cudart.ErrInvalidResourceHandle, "destroyed")
	require.NoError(t, f.EventDestroy(0, b))
}

func TestFakeHandleLeaks(t *testing.T) {
	f := cudarttest.NewFake()
	m, err := f.ModuleLoadData(0, probePTX)
	require.NoError(t, err)
	e, err := f.EventCreate(0)
	require.NoError(t, err)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, f.StreamDestroy(0, s))
	assert.Equal(t, cudarttest.Usage{Modules: 1, Events: 1, Graphs: 1, GraphExecs: 1}, f.Live())
	err = f.CheckLeaks()
	assert.ErrorIs(t, err, cudarttest.ErrLeaked)
	assert.EqualError(t, err, fmt.Sprintf(`cudarttest: CUDA resources still allocated: 4 still live:
	module 0x%x on device 0 from cuModuleLoadDataEx (call #1)
	event 0x%x on device 0 from cudaEventCreate (call #2)
	graph 0x%x on device 0 from cudaStreamEndCapture (call #5)
	graph exec 0x%x on device 0 from cudaGraphInstantiate (call #6)`, m, e, g, x))
	require.NoError(t, f.GraphExecDestroy(0, x))
	require.NoError(t, f.GraphDestroy(0, g))
	require.NoError(t, f.EventDestroy(0, e))
	require.NoError(t, f.ModuleUnload(0, m))
	assert.NoError(t, f.CheckLeaks())
}

func TestFakeDestroyedCapturingStreamBlocksNothing(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	p, err := f.Malloc(0, 8)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, p)) }()
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeGlobal))
	assert.ErrorIs(t, f.Memcpy(0, cudart.DeviceMem(p, 8), cudart.HostMem(make([]byte, 8)), cudart.HostToDevice), cudart.ErrStreamCaptureImplicit)
	require.NoError(t, f.StreamDestroy(0, s))
	assert.NoError(t, f.Memcpy(0, cudart.DeviceMem(p, 8), cudart.HostMem(make([]byte, 8)), cudart.HostToDevice))
}

func TestFakeEventRecordedInCapture(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.StreamDestroy(0, s)) }()
	e, err := f.EventCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.EventDestroy(0, e)) }()
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	require.NoError(t, f.EventRecord(0, e, s))
	_, err = f.EventQuery(0, e)
	assert.ErrorIs(t, err, cudart.ErrCapturedEvent)
	_, err = f.EventElapsedTime(0, e, e)
	assert.ErrorIs(t, err, cudart.ErrCapturedEvent)
	assert.ErrorIs(t, f.StreamWaitEvent(0, 0, e), cudart.ErrNotSupported, "joining a capture is not modelled")
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err, "none of those invalidated the capture")
	require.NoError(t, f.GraphDestroy(0, g))
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	require.NoError(t, f.EventRecord(0, e, s))
	assert.ErrorIs(t, f.EventSynchronize(0, e), cudart.ErrInvalidValue)
	_, err = f.StreamEndCapture(0, s)
	assert.ErrorIs(t, err, cudart.ErrStreamCaptureInvalidated, "a wait for the event invalidates the capture")
	require.NoError(t, f.EventRecord(0, e, s))
	assert.NoError(t, f.EventSynchronize(0, e), "recorded outside a capture again")
}
