package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// arenaWithBuffer is a 64 KiB device allocation registered as a heap with one
// 4 KiB region, "weights", 256 bytes in.
func arenaWithBuffer(t *testing.T, f *cudarttest.Fake) (cudart.DevicePtr, cudart.MemHeap) {
	t.Helper()
	base, err := f.Malloc(0, 64<<10)
	require.NoError(t, err)
	h, err := f.MemHeapRegister(0, base, 64<<10, "arena")
	require.NoError(t, err)
	require.NoError(t, f.MemRegionsRegister(h, []cudart.MemRegion{{Addr: base + 256, Size: 4096, Name: "weights"}}))
	t.Cleanup(func() {
		assert.NoError(t, f.MemHeapUnregister(h))
		assert.NoError(t, f.Free(0, base))
	})
	return base, h
}

// TestMemcheckCalls: each kind of access outside the registered region fails
// with cudaErrorIllegalAddress naming the buffer and the distance, and the
// same access inside it works.
func TestMemcheckCalls(t *testing.T) {
	host := make([]byte, 8)
	cases := []struct {
		name string
		call func(f *cudarttest.Fake, base cudart.DevicePtr) error
		want string
	}{
		{"memset one past", func(f *cudarttest.Fake, b cudart.DevicePtr) error { return f.Memset(0, b+256, 0, 4097) },
			`memset of 4097 B at 0x200000000100: byte 0x200000001100 in heap "arena" is in no registered buffer: it is byte 0 past the end of "weights" (4.0 KiB)`},
		{"copy in before", func(f *cudarttest.Fake, b cudart.DevicePtr) error {
			return f.Memcpy(0, cudart.DeviceMem(b+255, 8), cudart.HostMem(host), cudart.HostToDevice)
		}, `write of 8 B at 0x2000000000ff: byte 0x2000000000ff in heap "arena" is in no registered buffer: it is 1 B before the start of "weights" (4.0 KiB)`},
		{"copy out past", func(f *cudarttest.Fake, b cudart.DevicePtr) error {
			return f.Memcpy(0, cudart.HostMem(host), cudart.DeviceMem(b+256+4096+16, 8), cudart.DeviceToHost)
		}, `read of 8 B at 0x200000001110: byte 0x200000001110 in heap "arena" is in no registered buffer: it is byte 16 past the end of "weights" (4.0 KiB)`},
		{"async copy", func(f *cudarttest.Fake, b cudart.DevicePtr) error {
			return f.MemcpyAsync(0, cudart.DeviceMem(b+256+4090, 8), cudart.HostMem(host), cudart.HostToDevice, 0)
		}, `write of 8 B at 0x2000000010fa: byte 0x200000001100 in heap "arena" is in no registered buffer: it is byte 0 past the end of "weights"`},
		{"device to device", func(f *cudarttest.Fake, b cudart.DevicePtr) error {
			return f.Memcpy(0, cudart.DeviceMem(b+256, 8), cudart.DeviceMem(b+8192, 8), cudart.DeviceToDevice)
		}, `read of 8 B at 0x200000002000`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			base, _ := arenaWithBuffer(t, f)
			err := tc.call(f, base)
			require.ErrorIs(t, err, cudart.ErrIllegalAddress)
			assert.ErrorContains(t, err, tc.want)
			assert.NoError(t, f.DeviceSynchronize(0), "a refused call leaves the device working")

			plain := cudarttest.NewFake()
			base, _ = arenaWithBuffer(t, plain)
			assert.NoError(t, tc.call(plain, base), "NewFake does not enforce annotations unless WithMemcheck")
			optedOut := cudarttest.NewFakeT(t, cudarttest.WithoutMemcheck())
			base, _ = arenaWithBuffer(t, optedOut)
			assert.NoError(t, tc.call(optedOut, base), "NewFakeT(WithoutMemcheck) does not enforce annotations")
			assert.NoError(t, optedOut.DeviceSynchronize(0))
			assert.NoError(t, plain.DeviceSynchronize(0))
		})
	}
}

func TestMemcheckInsideAndOutsideHeaps(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	base, h := arenaWithBuffer(t, f)
	assert.NoError(t, f.Memset(0, base+256, 1, 4096), "the whole region")
	other, err := f.Malloc(0, 256)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, other)) }()
	assert.NoError(t, f.Memset(0, other, 1, 256), "memory outside every heap is not checked")

	require.NoError(t, f.MemRegionsUnregister(h, []cudart.DevicePtr{base + 256}))
	assert.NoError(t, f.DeviceSynchronize(0), "queued work is judged by the annotations it was queued under")
	err = f.Memset(0, base+256, 1, 1)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress, "an unregistered buffer is unallocated")
	assert.ErrorContains(t, err, `heap "arena", which has no registered buffer`)
}

// TestMemcheckKernel: a kernel's access outside every region faults the
// device, as an illegal access on a GPU does, with the buffer named.
func TestMemcheckKernel(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	base, err := f.Malloc(0, 64<<10)
	require.NoError(t, err)
	h, err := f.MemHeapRegister(0, base, 64<<10, "arena")
	require.NoError(t, err)
	defer func() {
		assert.NoError(t, f.MemHeapUnregister(h), "a heap outlives DeviceReset, as NVTX is not per device")
	}()
	require.NoError(t, f.MemRegionsRegister(h, []cudart.MemRegion{{Addr: base + 256, Size: 4096, Name: "weights"}}))
	k := loadProbe(t, f, func(k *cudarttest.KernelContext) error {
		k.Write(k.Ptr(0), make([]byte, k.Uint64(1)))
		return nil
	})
	require.NoError(t, launch(f, k, base+256, 4096))
	require.NoError(t, f.DeviceSynchronize(0))
	require.NoError(t, launch(f, k, base+256, 4097))
	err = f.DeviceSynchronize(0)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.ErrorContains(t, err, `kernel probe writes 4097 bytes at 0x200000000100: memcheck: write of 4097 B at 0x200000000100: byte 0x200000001100 in heap "arena" is in no registered buffer: it is byte 0 past the end of "weights" (4.0 KiB)`)
	require.NoError(t, f.DeviceReset(0), "the reset frees the arena")
}

// TestMemcheckHost: a host heap is checked by host address, through the
// device address that maps it too.
func TestMemcheckHost(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	b, err := f.HostAlloc(0, 8192, cudart.HostAllocMapped)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.FreeHost(b)) }()
	h, err := f.MemHeapRegister(0, cudart.HostPtr(b), 8192, "host arena")
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.MemHeapUnregister(h)) }()
	require.NoError(t, f.MemRegionsRegister(h, []cudart.MemRegion{{Addr: cudart.HostPtr(b), Size: 100, Name: "tokens"}}))
	dev := make([]byte, 101)
	d, err := f.Malloc(0, 101)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, d)) }()

	assert.NoError(t, f.Memcpy(0, cudart.DeviceMem(d, 100), cudart.HostMem(b[:100]), cudart.HostToDevice))
	err = f.Memcpy(0, cudart.DeviceMem(d, 101), cudart.HostMem(b[:101]), cudart.HostToDevice)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.ErrorContains(t, err, `byte 0 past the end of "tokens" (100 B)`)

	alias, err := f.HostGetDevicePointer(0, b)
	require.NoError(t, err)
	err = f.Memcpy(0, cudart.HostMem(dev), cudart.DeviceMem(alias, 101), cudart.DeviceToHost)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress, "through the mapped device address")
	assert.ErrorContains(t, err, `"tokens"`)
}

func TestAnnotationsLeakAndMisuse(t *testing.T) {
	f := cudarttest.NewFake()
	h, err := f.MemHeapRegister(0, 0x1000, 4096, "left")
	require.NoError(t, err)
	assert.Equal(t, 1, f.Live().MemHeaps)
	err = f.CheckLeaks()
	require.ErrorIs(t, err, cudarttest.ErrLeaked)
	assert.ErrorContains(t, err, `memory heap "left" at 0x1000 (4.0 KiB) from nvtxMemHeapRegister, after 0 runtime calls`, "worded as a library handle's leak")

	for name, err := range map[string]error{
		"outside":      f.MemRegionsRegister(h, []cudart.MemRegion{{Addr: 0x2000, Size: 1}}),
		"unregistered": f.MemRegionsUnregister(h, []cudart.DevicePtr{0x1000}),
		"name":         f.MemRegionsName(h, []cudart.MemRegion{{Addr: 0x1000, Name: "x"}}),
		"reset":        f.MemHeapReset(h + 1),
		"overlap":      second(f.MemHeapRegister(0, 0x1800, 1, "x")),
	} {
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, name)
	}
	require.NoError(t, f.MemHeapUnregister(h))
	assert.NoError(t, f.CheckLeaks())
	assert.ErrorIs(t, f.MemHeapUnregister(h), cudart.ErrInvalidValue, "twice")
}

func second[T any](_ T, err error) error { return err }
