package cudapool_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// pokePTX holds poke(u32 *p): *p = 1, whatever address p is.
const pokePTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry poke(.param .u64 poke_p)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;

	ld.param.u64 %rd1, [poke_p];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, 1;
	st.global.u32 [%rd1], %r1;
	ret;
}
`

// badAddress is where poke faults: no allocation is ever there.
const badAddress cudart.DevicePtr = 0x10

// resetChild marks the child process that faults its device: CUDA leaves a
// device that faulted unusable for the rest of the process, reset or not,
// so on a GPU it happens away from the other tests.
const resetChild = "CUDAPOOL_RESET_CHILD"

// TestRecoveryAfterAStickyFault: a kernel writes to an invalid address and
// faults the device (sticky: every call fails); cudaDeviceReset returns
// success, and the pool made before says so on Close and forgets its
// arenas; but the fault is one CUDA documents as fatal to the process, so
// the device is lost: a new pool in the same process fails with
// cudaErrorDevicesUnavailable. The recovery CUDA prescribes, a new process,
// then makes a pool with the same options that runs a full cycle, copies and
// a kernel included. On a GPU the fault happens in a child process and the
// new pool is made here once it exited; on the fake, the new process is a
// new Fake. Each step is logged.
func TestRecoveryAfterAStickyFault(t *testing.T) {
	if os.Getenv(resetChild) != "" {
		lib, err := cudart.Open()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, lib.Close()) })
		faultAndReset(t, lib)
		return
	}
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		if _, ok := rt.(*cudarttest.Fake); ok {
			faultAndReset(t, rt)
			t.Log("a new process (for the fake, a new Fake):")
			recoveredCycle(t, withPoke(cudarttest.NewFakeT(t)), recoverOptions())
			return
		}
		runChild(t, "TestRecoveryAfterAStickyFault", resetChild, "the child that faults its device")
		t.Log("a new process (this one, after the child exited):")
		recoveredCycle(t, rt, recoverOptions())
	})
}

// TestRecoveryAfterAReset: a reset with no fault, in this process on either
// runtime. Pools made before it, with a fixed device arena, a growable one
// (virtual memory, which the reset leaves) and registered host arenas,
// close once with ErrDeviceReset and nil after; the device's free memory is
// then back to what it was before them, within a granule, so the growable
// arena's physical memory was released too; and new pools with the same
// options run a full cycle in the same process.
func TestRecoveryAfterAReset(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		withPoke(rt)
		// A reset first, so that what earlier tests left in the context
		// does not come back with this test's reset and hide a leak.
		require.NoError(t, rt.DeviceReset(0))
		g, err := rt.MemGetAllocationGranularity(0, false)
		require.NoError(t, err)
		before, _ := memInfo(t, rt)
		kinds := []struct {
			name string
			opts []pool.Option
		}{
			{"fixed", []pool.Option{pool.WithDeviceBytes(64 << 20), pool.WithHostBytes(1 << 20), pool.WithGuards(256)}},
			{"growable", []pool.Option{pool.WithGrowableDevice(64 << 20), pool.WithHostBytes(1 << 20), pool.WithGuards(256)}},
		}
		var old []*pool.Pool
		for _, k := range kinds {
			p, err := pool.New(rt, k.opts...)
			require.NoError(t, err)
			pooltest.Device(t, p, 32<<20, pool.Name("before"))
			pooltest.Host(t, p, 4096, pool.Name("before"))
			require.NoError(t, p.Commit())
			st := p.Stats()
			t.Logf("%s pool made: device arena %s, host arena %s pinned by %s", k.name, bytesize.Format(st.Device.Capacity), bytesize.Format(st.Host.Capacity), st.HostPinning)
			old = append(old, p)
		}
		afterReset := slotsBeforeReset(t, rt)
		during, _ := memInfo(t, rt)
		t.Logf("free device memory: %d B before the pools, %d B with them", before, during)

		require.NoError(t, rt.DeviceReset(0))
		t.Logf("cudaDeviceReset: ok (resets counted: %d)", rt.DeviceResets(0))
		afterReset()
		for i, p := range old {
			err := p.Close()
			require.ErrorIs(t, err, pool.ErrDeviceReset)
			t.Logf("old %s pool's Close: %v", kinds[i].name, err)
			require.NoError(t, p.Close(), "a second Close")
		}
		t.Log("old pools' second Close: ok")
		after, _ := memInfo(t, rt)
		t.Logf("free device memory after the Closes: %d B (%+d B against before the pools; granule %s)", after, int64(after)-int64(before), bytesize.Format(g))
		assert.GreaterOrEqual(t, after+g, before, "the memory came back, the growable arena's too, within a granule")

		for _, k := range kinds {
			t.Logf("a new %s pool in the same process:", k.name)
			recoveredCycle(t, rt, k.opts)
		}
	})
}

// slotsBeforeReset makes two slots and holds one, and returns what checks
// them once the device was reset: Acquire and the held slot's Ptr say so,
// Release asks the dead stream nothing, and Close says so once, then nil.
func slotsBeforeReset(t *testing.T, rt cudart.Full) (afterReset func()) {
	req := pool.NewProfile("request")
	x, err := req.Device(1<<20, pool.Name("x"))
	require.NoError(t, err)
	s, err := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{req}}, pool.WithHostBytes(0))
	require.NoError(t, err)
	held, err := s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	return func() {
		_, err := s.Acquire(context.Background(), "request")
		require.ErrorIs(t, err, pool.ErrDeviceReset)
		_, err = held.Ptr(x)
		require.ErrorIs(t, err, pool.ErrDeviceReset)
		require.NoError(t, s.Release(held), "Release asks the reset's dead stream nothing")
		err = s.Close()
		require.ErrorIs(t, err, pool.ErrDeviceReset)
		t.Logf("slots made before: Acquire and Ptr say the device was reset; Release: ok; Close: %v", err)
		require.NoError(t, s.Close(), "a second Close")
	}
}

// recoverOptions are the pool's options before and after the reset: both
// arenas, the host one registered (package pinned's registry), with guards
// (the pool's own fills).
func recoverOptions() []pool.Option {
	return []pool.Option{pool.WithDeviceBytes(4 << 20), pool.WithHostBytes(1 << 20), pool.WithGuards(256)}
}

// withPoke gives the fake a Go poke; CUDA runs pokePTX's. It returns rt.
func withPoke(rt cudart.Full) cudart.Full {
	if f, ok := rt.(*cudarttest.Fake); ok {
		f.RegisterKernel("poke", func(k *cudarttest.KernelContext) error {
			k.Write(k.Ptr(0), binary.LittleEndian.AppendUint32(nil, 1))
			return nil
		})
	}
	return rt
}

// faultAndReset faults the device under a pool, resets it, closes the pool
// and shows that the device is lost for the rest of the process.
func faultAndReset(t *testing.T, rt cudart.Full) {
	withPoke(rt)
	p, err := pool.New(rt, recoverOptions()...)
	require.NoError(t, err)
	oldHost := p.Stats().Host.Capacity
	b := pooltest.Device(t, p, 4096, pool.Name("before"))
	require.NoError(t, p.Commit())
	afterReset := slotsBeforeReset(t, rt)
	t.Logf("pool made: %s host arena pinned by %s", bytesize.Format(oldHost), p.Stats().HostPinning)

	m, err := rt.ModuleLoadData(0, pokePTX)
	require.NoError(t, err)
	poke, err := rt.ModuleGetFunction(0, m, "poke")
	require.NoError(t, err)
	require.NoError(t, rt.LaunchKernel(0, poke, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(badAddress)))
	fault := rt.DeviceSynchronize(0)
	require.True(t, errors.Is(fault, cudart.ErrIllegalAddress) || errors.Is(fault, cudart.ErrLaunchFailure), "the write to %s faults: %v", badAddress, fault)
	t.Logf("kernel wrote to %s: %v", badAddress, fault)
	_, err = rt.Malloc(0, 256)
	require.ErrorIs(t, err, fault, "the fault is sticky")
	t.Logf("sticky: cudaMalloc then fails too: %v", err)
	assert.Error(t, p.ReleaseAll(), "the pool cannot release on a faulted device")

	require.NoError(t, rt.DeviceReset(0))
	t.Logf("cudaDeviceReset: ok (resets counted: %d)", rt.DeviceResets(0))
	_, err = b.Ptr()
	require.ErrorIs(t, err, pool.ErrDeviceReset)
	afterReset()
	err = p.Close()
	require.ErrorIs(t, err, pool.ErrDeviceReset)
	t.Logf("old pool's Close: %v", err)
	require.NoError(t, p.Close(), "a second Close")
	t.Logf("old pool's second Close: ok")

	_, err = pool.New(rt, recoverOptions()...)
	require.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "the fault was fatal: the device is lost for the rest of the process")
	t.Logf("a new pool in the same process: %v", err)
	err = rt.DeviceReset(0)
	require.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "a second reset does not bring it back")
	t.Logf("a second cudaDeviceReset: %v", err)
}

// recoveredCycle makes a pool with opts on rt and runs a full cycle: Want,
// Satisfy, copies in and out checked, a kernel's write, Check, ReleaseAll,
// Close, and a synchronisation that finds no fault.
func recoveredCycle(t *testing.T, rt cudart.Full, opts []pool.Option) {
	q, err := pool.New(rt, opts...)
	require.NoError(t, err, "a new pool with the same options")
	t.Logf("new pool made: host arena pinned by %s", q.Stats().HostPinning)
	dev := pooltest.Device(t, q, 64<<10, pool.Name("device"))
	host := pooltest.Host(t, q, 64<<10, pool.Name("host"))
	flag := pooltest.Device(t, q, 4, pool.Name("flag"))
	require.NoError(t, q.Satisfy())
	hb := pooltest.Bytes(t, host)
	want := bytes.Repeat([]byte("recovered"), len(hb)/9+1)[:len(hb)]
	copy(hb, want)
	dp := pooltest.Ptr(t, dev)
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(dp, dev.Size()), cudart.HostMem(hb), cudart.HostToDevice))
	require.Equal(t, want, pooltest.Read(t, rt, dev), "host -> device -> host through the new pool")
	t.Logf("new pool's copies: %s in and out, equal", bytesize.Format(dev.Size()))

	poke := pooltest.Kernel(t, rt, 0, pokePTX, "poke")
	fp := pooltest.Ptr(t, flag)
	require.NoError(t, rt.LaunchKernel(0, poke, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(fp)))
	require.NoError(t, rt.DeviceSynchronize(0))
	word := make([]byte, 4)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(word), cudart.DeviceMem(fp, 4), cudart.DeviceToHost))
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(word), "the kernel ran on the new pool's buffer")
	t.Log("kernel on the new pool's buffer: wrote 1")
	require.NoError(t, q.Check(), "no guard damaged")
	require.NoError(t, q.ReleaseAll())
	require.NoError(t, q.Close())
	require.NoError(t, rt.DeviceSynchronize(0), "no fault left")
	t.Log("new pool: Check, ReleaseAll, Close and a device synchronisation: ok")
}
