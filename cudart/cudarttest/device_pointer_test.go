package cudarttest_test

import (
	"reflect"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// The fake's answers that the conformance suite leaves out, CUDA's being
// undocumented there: memory it does not know (freed, never handed out),
// stream-ordered memory, host memory that is not mapped, virtual memory a
// device may not access, and a reservation with nothing mapped.
func TestPointerAttributesOfEveryKind(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	gone, err := f.Malloc(0, mib)
	require.NoError(t, err)
	require.NoError(t, f.Free(0, gone))
	async, err := f.MallocAsync(1, mib, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Free(1, async)) })
	reg := make([]byte, 64*kib)
	require.NoError(t, f.HostRegister(1, reg, cudart.HostRegisterDefault))
	t.Cleanup(func() { assert.NoError(t, f.HostUnregister(1, reg)) })
	regAt := cudart.DevicePtr(reflect.ValueOf(reg).Pointer())

	_, va := mapped(t, f, g, 2*g)
	require.NoError(t, f.MemSetAccess(va, g, []int{0}))

	for name, c := range map[string]struct {
		device int
		p      cudart.DevicePtr
		want   cudart.PointerAttributes
	}{
		"freed":                    {0, gone, cudart.PointerAttributes{Type: cudart.MemoryUnregistered, Device: -2, HostPointer: uintptr(gone)}},
		"address 0":                {0, 0, cudart.PointerAttributes{Type: cudart.MemoryUnregistered, Device: -2}},
		"stream-ordered":           {0, async.Add(8), cudart.PointerAttributes{Type: cudart.MemoryDevice, Device: 1, DevicePointer: async.Add(8)}},
		"registered, not mapped":   {0, regAt.Add(100), cudart.PointerAttributes{Type: cudart.MemoryHost, Device: 1, HostPointer: uintptr(regAt) + 100}},
		"mapped, device 0 may":     {0, va, cudart.PointerAttributes{Type: cudart.MemoryDevice, Device: 0, DevicePointer: va}},
		"mapped, device 1 may not": {1, va, cudart.PointerAttributes{Type: cudart.MemoryDevice, Device: 0}},
	} {
		got, err := f.PointerAttributes(c.device, c.p)
		require.NoError(t, err, name)
		assert.Equal(t, c.want, got, name)
	}
	_, err = f.PointerAttributes(0, va.Add(g))
	require.ErrorIs(t, err, cudart.ErrInvalidValue, "reserved, not mapped")
	assert.Contains(t, err.Error(), "cudaPointerGetAttributes")
	_, err = f.PointerAttributes(2, va)
	require.ErrorIs(t, err, cudart.ErrInvalidDevice)
}
