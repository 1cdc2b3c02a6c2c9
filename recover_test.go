package cudapool_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/bytesize"
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

// resetChild marks the child process that faults its device: a sticky
// fault spoils the whole process's context until the reset, so on a GPU it
// happens away from the other tests.
const resetChild = "CUDAPOOL_RESET_CHILD"

// TestRecoveryAfterAStickyFault: a kernel writes to an invalid address and
// faults the device (sticky: every call fails); cudaDeviceReset clears it;
// the pool made before says so on Close and forgets its arenas; a new pool
// with the same options then runs a full cycle, copies and a kernel
// included. On a GPU it runs in a child process and prints each step.
func TestRecoveryAfterAStickyFault(t *testing.T) {
	if os.Getenv(resetChild) != "" {
		lib, err := cudart.Open()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, lib.Close()) })
		recoverFromFault(t, lib)
		return
	}
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		if _, ok := rt.(*cudarttest.Fake); ok {
			recoverFromFault(t, rt)
			return
		}
		runChild(t, "TestRecoveryAfterAStickyFault", resetChild, "the child that faults its device")
	})
}

// recoverOptions are the pool's options before and after the reset: both
// arenas, the host one registered (package pinned's registry), with guards
// (the pool's own fills).
func recoverOptions() []pool.Option {
	return []pool.Option{pool.WithDeviceBytes(4 << 20), pool.WithHostBytes(1 << 20), pool.WithGuards(256)}
}

func recoverFromFault(t *testing.T, rt cudart.Full) {
	if f, ok := rt.(*cudarttest.Fake); ok {
		f.RegisterKernel("poke", func(k *cudarttest.KernelContext) error {
			k.Write(k.Ptr(0), binary.LittleEndian.AppendUint32(nil, 1))
			return nil
		})
	}
	p, err := pool.New(rt, recoverOptions()...)
	require.NoError(t, err)
	oldHost := p.Stats().Host.Capacity
	b, err := p.WantDevice(4096, pool.Name("before"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	t.Logf("pool made: %s host arena pinned by %s", bytesize.Format(oldHost), p.Stats().HostPinning)

	m, err := rt.ModuleLoadData(0, pokePTX)
	require.NoError(t, err)
	poke, err := rt.ModuleGetFunction(0, m, "poke")
	require.NoError(t, err)
	require.NoError(t, rt.LaunchKernel(0, poke, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.ArgPtr(badAddress)))
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
	err = p.Close()
	require.ErrorIs(t, err, pool.ErrDeviceReset)
	t.Logf("old pool's Close: %v", err)
	require.NoError(t, p.Close(), "a second Close")
	t.Logf("old pool's second Close: ok")

	q, err := pool.New(rt, recoverOptions()...)
	require.NoError(t, err, "a new pool with the same options")
	t.Logf("new pool made: host arena pinned by %s", q.Stats().HostPinning)
	dev, err := q.WantDevice(64<<10, pool.Name("device"))
	require.NoError(t, err)
	host, err := q.WantHost(64<<10, pool.Name("host"))
	require.NoError(t, err)
	flag, err := q.WantDevice(4, pool.Name("flag"))
	require.NoError(t, err)
	require.NoError(t, q.Satisfy())
	hb, err := host.Bytes()
	require.NoError(t, err)
	want := bytes.Repeat([]byte("recovered"), len(hb)/9+1)[:len(hb)]
	copy(hb, want)
	dp, err := dev.Ptr()
	require.NoError(t, err)
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(dp, dev.Size()), cudart.HostMem(hb), cudart.HostToDevice))
	back := make([]byte, dev.Size())
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(back), cudart.DeviceMem(dp, dev.Size()), cudart.DeviceToHost))
	require.Equal(t, want, back, "host -> device -> host through the new pool")
	t.Logf("new pool's copies: %s in and out, equal", bytesize.Format(dev.Size()))

	m2, err := rt.ModuleLoadData(0, pokePTX)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.ModuleUnload(0, m2)) })
	poke, err = rt.ModuleGetFunction(0, m2, "poke")
	require.NoError(t, err)
	fp, err := flag.Ptr()
	require.NoError(t, err)
	require.NoError(t, rt.LaunchKernel(0, poke, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.ArgPtr(fp)))
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
