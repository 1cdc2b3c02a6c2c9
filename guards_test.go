package cudapool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// A copy one byte too long into a device buffer is caught by the guards,
// with no sanitizer, on the fake and on a GPU. The fake runs without its
// memcheck, as a GPU runs without a tool.
func TestGuardsCatchAOneByteOverflow(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		p := pooltest.New(t, rt, pool.WithDeviceBytes(16<<20), pool.WithHostBytes(1<<20),
			pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithGuards(256))
		src := pooltest.Device(t, p, 4096, pool.Name("src"))
		dst := pooltest.Device(t, p, 4000, pool.Name("dst"))
		require.NoError(t, p.Satisfy())
		sp, dp := pooltest.Ptr(t, src), pooltest.Ptr(t, dst)
		require.NoError(t, rt.Memset(0, sp, 0x5a, 4096))
		require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(dp, 4000), cudart.DeviceMem(sp, 4000), cudart.DeviceToDevice))
		require.NoError(t, rt.DeviceSynchronize(0))
		require.NoError(t, p.Check(), "a copy of exactly the buffer's size")
		if rt.AnnotationsEnabled(0) {
			t.Skip("a memory tool listens and reports this deliberate overflow itself; guards are for runs without one")
		}

		require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(dp, 4001), cudart.DeviceMem(sp, 4001), cudart.DeviceToDevice))
		require.NoError(t, rt.DeviceSynchronize(0))
		err := p.Check()
		require.ErrorIs(t, err, pool.ErrCorrupted)
		var ce *pool.CorruptedError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []pool.Corruption{{Arena: pool.Device, Name: "dst", Size: 4000, Past: 0, Found: 0x5a}}, ce.Damaged)
		t.Log(err)
	}, cudarttest.WithoutMemcheck())
}
