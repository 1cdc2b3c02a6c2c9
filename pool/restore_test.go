package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

func TestAFailedNewRestoresTheMallocHeap(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	before, err := f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	// The second cudaDeviceGetLimit of New reads what was granted: the
	// heap is already set when it fails.
	require.NoError(t, f.FailCallNth("cudaDeviceGetLimit", 2, cudart.ErrInvalidValue.Code))
	_, err = pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithMallocHeap(64*mib))
	require.ErrorIs(t, err, cudart.ErrInvalidValue)
	f.ClearFaults()
	after, err := f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the heap is back to its size before New")
}

func TestAFailedNewRestoresTheDeviceFlags(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	// Modern CUDA reports cudaDeviceMapHost from the start; clear it so
	// that pinning a mapped arena sets it.
	require.NoError(t, f.SetDeviceFlags(0, 0))
	before, err := f.GetDeviceFlags(0)
	require.NoError(t, err)
	require.Zero(t, before&cudart.DeviceMapHost)
	free, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	_, err = pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc),
		pool.WithHostFlags(pinned.Mapped), pool.WithManagedBytes(2*free))
	require.ErrorIs(t, err, pool.ErrInvalidOption, "the managed arena is larger than the device")
	after, err := f.GetDeviceFlags(0)
	require.NoError(t, err)
	assert.Equal(t, before, after, "cudaDeviceMapHost is cleared again")
}

func TestCloseWaitsForTheDeviceBeforeFreeing(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []pool.Option
		free []string
	}{
		{"fixed", []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodRegisterNoHugePages)},
			[]string{"cudaFree", "cudaHostUnregister"}},
		{"growable", []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithHostBytes(0)},
			[]string{"cuMemUnmap", "cuMemAddressFree"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			p, err := pool.New(f, tt.opts...)
			require.NoError(t, err)
			b, err := p.WantDevice(mib)
			require.NoError(t, err)
			require.NoError(t, p.Satisfy())
			_, err = b.Ptr()
			require.NoError(t, err)
			f.ResetCalls()
			require.NoError(t, p.Close())
			calls := f.Calls()
			require.NotEmpty(t, calls)
			assert.Equal(t, "cudaDeviceSynchronize", calls[0], "Close waits first: %v", calls)
			for _, c := range tt.free {
				assert.Contains(t, calls, c)
			}
		})
	}
}

func TestAFailedWaitInCloseStillFrees(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	require.NoError(t, err)
	require.NoError(t, f.FailCall("cudaDeviceSynchronize", cudart.ErrIllegalAddress.Code))
	err = p.Close()
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.ErrorContains(t, err, "wait for device 0")
	f.ClearFaults()
	assert.NoError(t, p.Close(), "the arena was freed: NewFakeT finds no leak")
}
