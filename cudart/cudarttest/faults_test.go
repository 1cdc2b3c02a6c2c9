package cudarttest_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// step is one call of a lifecycle and the call that undoes it, if any.
type step func() (undo func() error, err error)

// lifecycle returns a run through every kind of allocation the fake offers,
// as steps that share their results.
func lifecycle(f *cudarttest.Fake) []step {
	var (
		dev     cudart.DevicePtr
		mapped  []byte
		alias   cudart.DevicePtr
		stream  cudart.Stream
		managed cudart.DevicePtr
		h       cudart.PhysHandle
		va      cudart.DevicePtr
	)
	reg := make([]byte, 8*kib)
	none := func(err error) (func() error, error) { return nil, err }
	return []step{
		func() (func() error, error) {
			var err error
			dev, err = f.Malloc(0, mib)
			return func() error { return f.Free(0, dev) }, err
		},
		func() (func() error, error) {
			p, err := f.MallocHost(0, 64*kib)
			return func() error { return f.FreeHost(p) }, err
		},
		func() (func() error, error) {
			var err error
			mapped, err = f.HostAlloc(0, 64*kib, cudart.HostAllocMapped)
			return func() error { return f.FreeHost(mapped) }, err
		},
		func() (func() error, error) {
			var err error
			alias, err = f.HostGetDevicePointer(0, mapped)
			return nil, err
		},
		func() (func() error, error) {
			return none(f.Memcpy(0, cudart.DeviceMem(dev, 64*kib), cudart.DeviceMem(alias, 64*kib), cudart.DeviceToDevice))
		},
		func() (func() error, error) { return none(f.Memset(0, dev, 1, mib)) },
		func() (func() error, error) {
			return func() error { return f.HostUnregister(0, reg) }, f.HostRegister(0, reg, cudart.HostRegisterMapped)
		},
		func() (func() error, error) {
			var err error
			stream, err = f.StreamCreate(0)
			return func() error { return f.StreamDestroy(0, stream) }, err
		},
		func() (func() error, error) {
			return none(f.MemcpyAsync(0, cudart.HostMem(reg), cudart.DeviceMem(dev, uint64(len(reg))), cudart.DeviceToHost, stream))
		},
		func() (func() error, error) {
			var err error
			managed, err = f.MallocManaged(0, mib, cudart.MemAttachGlobal)
			return func() error { return f.Free(0, managed) }, err
		},
		func() (func() error, error) { return none(f.MemPrefetchAsync(0, managed, mib, 0, stream)) },
		func() (func() error, error) {
			p, err := f.MallocAsync(0, mib, stream)
			return func() error { return f.FreeAsync(0, p, stream) }, err
		},
		func() (func() error, error) {
			var err error
			h, err = f.MemCreate(0, g)
			return func() error { return f.MemRelease(h) }, err
		},
		func() (func() error, error) {
			var err error
			va, err = f.MemAddressReserve(2*g, 0, 0)
			return func() error { return f.MemAddressFree(va, 2*g) }, err
		},
		func() (func() error, error) {
			return func() error { return f.MemUnmap(va, g) }, f.MemMap(va, g, 0, h)
		},
		func() (func() error, error) { return none(f.MemSetAccess(va, g, []int{0})) },
		func() (func() error, error) {
			// The memset is queued: it must be done before the unmap.
			return func() error { return f.DeviceSynchronize(0) }, f.Memset(0, va, 2, g)
		},
		func() (func() error, error) { return none(f.DeviceSynchronize(0)) },
	}
}

// runLifecycle runs the steps, stopping at the first failure, then undoes
// what succeeded. Every failed call must leave the fake as it was; a failed
// undo is retried. It returns the first error.
func runLifecycle(t *testing.T, f *cudarttest.Fake) error {
	t.Helper()
	var undos []func() error
	var first error
	for i, s := range lifecycle(f) {
		before := f.Live()
		undo, err := s()
		if err != nil {
			require.Equal(t, before, f.Live(), "step %d failed but changed the fake: %v", i, err)
			first = err
			break
		}
		if undo != nil {
			undos = append(undos, undo)
		}
	}
	for i := len(undos) - 1; i >= 0; i-- {
		before := f.Live()
		if err := undos[i](); err != nil {
			require.Equal(t, before, f.Live(), "an undo failed but changed the fake: %v", err)
			if first == nil {
				first = err
			}
			require.NoError(t, undos[i](), "the retried undo")
		}
	}
	return first
}

// TestEveryInjectedFailureLeavesNoState fails each call of a lifecycle in
// turn: the failed call changes nothing, the error is the injected one on
// the call the log names, and undoing the rest leaves nothing allocated.
func TestEveryInjectedFailureLeavesNoState(t *testing.T) {
	probe := cudarttest.NewFakeT(t)
	require.NoError(t, runLifecycle(t, probe))
	calls := probe.Calls()
	require.Greater(t, len(calls), 25)
	for n := 1; n <= len(calls); n++ {
		t.Run(fmt.Sprintf("%d_%s", n, calls[n-1]), func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			require.NoError(t, f.FailNth(n, 2))
			err := runLifecycle(t, f)
			require.Error(t, err)
			assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
			var ce *cudart.Error
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Call, calls[n-1]+"(")
			assert.Contains(t, ce.Call, fmt.Sprintf("injected by FailNth(%d)", n))
			assert.Equal(t, calls[n-1], f.Calls()[n-1], "the log counts failed calls")
			free, total, err := f.MemGetInfo(0)
			require.NoError(t, err)
			assert.Equal(t, total, free)
		})
	}
}

func TestFailCallFailsEveryCallOfThatName(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	require.NoError(t, f.FailCall("cudaMalloc", 2))
	for range 3 {
		_, err := f.Malloc(0, 1)
		assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	}
	h, err := f.MallocHost(0, 1)
	require.NoError(t, err, "other calls are untouched")
	require.NoError(t, f.FreeHost(h))
	f.ClearFaults()
	p, err := f.Malloc(0, 1)
	require.NoError(t, err)
	require.NoError(t, f.Free(0, p))
}

func TestFailCallNthCountsOnlyThatName(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	require.NoError(t, f.FailCallNth("cudaFree", 2, 1))
	var ps []cudart.DevicePtr
	for range 3 {
		p, err := f.Malloc(0, 1)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	require.NoError(t, f.Free(0, ps[0]))
	err := f.Free(0, ps[1])
	assert.ErrorIs(t, err, cudart.ErrInvalidValue)
	assert.ErrorContains(t, err, `injected by FailCallNth("cudaFree", 2)`)
	assert.Equal(t, 2, f.Live().DeviceAllocs, "the failed free freed nothing")
	require.NoError(t, f.Free(0, ps[1]), "the fault fires once")
	require.NoError(t, f.Free(0, ps[2]))
}

func TestCallsAndResetCalls(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := f.Malloc(0, 1)
	require.NoError(t, err)
	_, err = f.MemAddressReserve(1, 0, 0)
	require.Error(t, err)
	assert.Equal(t, []string{"cudaMalloc", "cuMemAddressReserve"}, f.Calls())
	f.ResetCalls()
	assert.Empty(t, f.Calls())
	require.NoError(t, f.Free(0, p))
	assert.Equal(t, []string{"cudaFree"}, f.Calls())
}

func TestFaultsRefuseMistakes(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	for _, err := range []error{f.FailCall("cudaMallocc", 2), f.FailCallNth("cudaMallocc", 1, 2)} {
		assert.ErrorContains(t, err, `the fake makes no call "cudaMallocc"`)
		assert.ErrorContains(t, err, "cuMemMap", "the error lists the names the fake answers")
		assert.NotContains(t, err.Error(), "cudaGetErrorName", "the binding's own calls are not the fake's")
	}
	assert.ErrorContains(t, f.FailCall("cudaGetErrorName", 2), "the fake makes no call")
	assert.ErrorContains(t, f.FailNth(0, 2), "n counts from 1")
	assert.ErrorContains(t, f.FailCallNth("cudaFree", 0, 2), "n counts from 1")
	p, err := f.Malloc(0, 1)
	require.NoError(t, err, "a refused fault is not installed")
	require.NoError(t, f.Free(0, p))
}
