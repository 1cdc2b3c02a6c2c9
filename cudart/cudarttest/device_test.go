package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func TestInvalidDeviceOrdinals(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	for _, d := range []int{-1, 2} {
		calls := map[string]func() error{
			"Malloc":       func() error { _, err := f.Malloc(d, 1); return err },
			"Free":         func() error { return f.Free(d, 0) },
			"MemGetInfo":   func() error { _, _, err := f.MemGetInfo(d); return err },
			"MallocHost":   func() error { _, err := f.MallocHost(d, 1); return err },
			"SetDevice":    func() error { return f.SetDevice(d) },
			"MemCreate":    func() error { _, err := f.MemCreate(d, 2*mib); return err },
			"StreamCreate": func() error { _, err := f.StreamCreate(d); return err },
		}
		for name, call := range calls {
			assert.ErrorIs(t, call(), cudart.ErrInvalidDevice, "%s(device %d)", name, d)
		}
	}
}

func TestStreamsAreCheckedHandles(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	assert.Equal(t, 1, f.Live().Streams)
	require.NoError(t, f.StreamDestroy(0, s))
	assert.ErrorIs(t, f.StreamDestroy(0, s), cudart.ErrInvalidResourceHandle, "destroyed twice")
	assert.ErrorIs(t, f.StreamSynchronize(0, s), cudart.ErrInvalidResourceHandle, "destroyed stream")
	b := make([]byte, 4)
	assert.ErrorIs(t, f.MemcpyAsync(0, cudart.HostMem(b), cudart.HostMem(b), cudart.HostToHost, s), cudart.ErrInvalidResourceHandle)
	for _, builtin := range []cudart.Stream{0, 1, 2} {
		assert.NoError(t, f.StreamSynchronize(0, builtin))
	}
	assert.ErrorIs(t, f.StreamDestroy(0, 0), cudart.ErrInvalidResourceHandle, "the default stream is not destroyed")
}

func TestManagedMemoryAndPrefetch(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	_, err := f.MallocManaged(0, 0, cudart.MemAttachGlobal)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "size 0")
	_, err = f.MallocManaged(0, 1, 0)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "no attach flag")
	p, err := f.MallocManaged(0, mib, cudart.MemAttachHost)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Free(0, p)) })
	_, ok := f.PrefetchedTo(p)
	assert.False(t, ok, "never prefetched")
	require.NoError(t, f.MemPrefetchAsync(0, p, mib, 1, 0))
	require.NoError(t, f.StreamSynchronize(0, 0))
	d, ok := f.PrefetchedTo(p.Add(10))
	assert.True(t, ok)
	assert.Equal(t, 1, d)
	require.NoError(t, f.MemPrefetchAsync(0, p.Add(4*kib), 4*kib, cudart.CPUDevice, 0))
	require.NoError(t, f.DeviceSynchronize(0))
	d, _ = f.PrefetchedTo(p)
	assert.Equal(t, cudart.CPUDevice, d)

	assert.ErrorIs(t, f.MemPrefetchAsync(0, p, mib+1, 0, 0), cudart.ErrInvalidValue, "past the end")
	assert.ErrorIs(t, f.MemPrefetchAsync(0, p, mib, 2, 0), cudart.ErrInvalidDevice, "no device 2")
	dev := mustMalloc(t, f, kib)
	assert.ErrorIs(t, f.MemPrefetchAsync(0, dev, kib, 0, 0), cudart.ErrInvalidValue, "not managed")
	assert.Equal(t, 1, f.Live().ManagedAllocs)
}

func TestDeviceStateDefaultsAndRoundTrips(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	heap, err := f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	assert.Equal(t, uint64(8*mib), heap)
	require.NoError(t, f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 3*mib))
	heap, err = f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	assert.Equal(t, uint64(3*mib), heap)
	_, err = f.DeviceGetLimit(0, 99)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a value that is no cudaLimit")
	_, err = f.DeviceGetLimit(0, 5)
	assert.ErrorContains(t, err, "cudaErrorUnsupportedLimit", "cudaLimitMaxL2FetchGranularity, which the fake does not model")
	assert.ErrorContains(t, f.DeviceSetLimit(0, 5, 64), "cudaErrorUnsupportedLimit")

	v, err := f.RuntimeVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, v)
	v, err = f.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, v)
	name, err := f.DeviceName(0)
	require.NoError(t, err)
	assert.Equal(t, "cudapool fake device", name)

	require.NoError(t, f.SetDeviceFlags(0, cudart.DeviceMapHost|1))
	flags, err := f.GetDeviceFlags(0)
	require.NoError(t, err)
	assert.Equal(t, cudart.DeviceMapHost|1, flags)

	th, err := f.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Zero(t, th)
	require.NoError(t, f.SetMemPoolReleaseThreshold(0, 5*mib))
	th, err = f.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(5*mib), th)
}

func TestNewFakePanicsOnImpossibleOptions(t *testing.T) {
	for want, opts := range map[string][]cudarttest.Option{
		"cudarttest: invalid option: WithDevices(-1): want 0 to 64":                                 {cudarttest.WithDevices(-1)},
		"cudarttest: invalid option: WithDevices(65): want 0 to 64":                                 {cudarttest.WithDevices(65)},
		"cudarttest: invalid option: WithGranularity(3145728): want a power of two of at least 256": {cudarttest.WithGranularity(3 * mib)},
		"cudarttest: invalid option: WithPeerAccess(0, 0): want two different devices, 0 to 63":     {cudarttest.WithPeerAccess(0, 0)},
		"cudarttest: invalid option: WithPeerAccess names device 1 of 1":                            {cudarttest.WithPeerAccess(0, 1)},
		"cudarttest: invalid option: WithPeerAccess(-1, 0): want two different devices, 0 to 63":    {cudarttest.WithPeerAccess(-1, 0)},
		"cudarttest: invalid option: option 2 of 2 is nil":                                          {cudarttest.WithDevices(2), nil},
	} {
		assert.PanicsWithError(t, want, func() { cudarttest.NewFake(opts...) })
		err := cudarttest.CheckOptions(opts...)
		assert.ErrorIs(t, err, cudarttest.ErrInvalidOption, want)
		assert.EqualError(t, err, want)
	}
}

// TestZeroDevicesIsNoDevice: a fake with no device answers as CUDA does on
// a machine with no GPU.
func TestZeroDevicesIsNoDevice(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(0))
	n, err := f.DeviceCount()
	assert.ErrorIs(t, err, cudart.ErrNoDevice)
	assert.Zero(t, n)
	_, err = f.Malloc(0, 1)
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice, "there is no device 0")
}
