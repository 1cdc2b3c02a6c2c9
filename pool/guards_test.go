package pool_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// corruption is the one damaged guard err reports.
func corruption(t *testing.T, err error) pool.Corruption {
	t.Helper()
	var ce *pool.CorruptedError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, pool.ErrCorrupted)
	require.Len(t, ce.Damaged, 1, "%v", err)
	return ce.Damaged[0]
}

func TestGuardsCatchAWritePastTheEnd(t *testing.T) {
	for _, tt := range []struct {
		name string
		size uint64
		past uint64 // where the stray byte lands, past the buffer's end
	}{
		{"one byte past", 1000, 0},
		{"into the alignment padding", 100, 50},
		{"into the guard proper", 256, 300},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, f := newUncheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithGuards(512))
			_, err := p.WantDevice(4096, pool.Name("before"))
			require.NoError(t, err)
			b, err := p.WantDevice(tt.size, pool.Name("victim"))
			require.NoError(t, err)
			_, err = p.WantDevice(4096, pool.Name("after"))
			require.NoError(t, err)
			require.NoError(t, p.Satisfy())
			require.NoError(t, p.Check(), "nothing written yet")
			ptr, err := b.Ptr()
			require.NoError(t, err)
			require.NoError(t, f.Memset(0, ptr, 1, tt.size), "the buffer itself may be written whole")
			require.NoError(t, f.DeviceSynchronize(0))
			require.NoError(t, p.Check())

			require.NoError(t, f.Memset(0, ptr.Add(tt.size+tt.past), 0x42, 1))
			require.NoError(t, f.DeviceSynchronize(0))
			c := corruption(t, p.Check())
			assert.Equal(t, pool.Corruption{Arena: pool.Device, Name: "victim", Size: tt.size, Past: tt.past, Found: 0x42}, c)
			assert.ErrorContains(t, p.Check(), `device "victim" (`)
		})
	}
}

func TestGuardsOfHostAndManagedArenas(t *testing.T) {
	p, f := newUncheckedPool(t, pool.WithDeviceBytes(0), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc),
		pool.WithHostFlags(pinned.Mapped), pool.WithManagedBytes(mib), pool.WithGuards(256))
	h, err := p.WantHost(10, pool.Name("h"))
	require.NoError(t, err)
	m, err := p.WantManaged(10, pool.Name("m"))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	require.NoError(t, p.Check())
	// A kernel writing through the host arena's device address, 3 bytes
	// past h, and through the managed one, 2 bytes past m.
	hp, err := h.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, hp.Add(13), 5, 1))
	mp, err := m.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, mp.Add(12), 7, 1))
	require.NoError(t, f.DeviceSynchronize(0))
	var ce *pool.CorruptedError
	require.ErrorAs(t, p.Check(), &ce)
	assert.Equal(t, []pool.Corruption{
		{Arena: pool.Host, Name: "h", Size: 10, Past: 3, Found: 5},
		{Arena: pool.Managed, Name: "m", Size: 10, Past: 2, Found: 7},
	}, ce.Damaged)
}

func TestGuardsSkipBytesAnotherBufferOwns(t *testing.T) {
	// small lives at steps 0..1 and big at 2..3: they share bytes, and
	// big's data covers small's guard, so writing big whole is no
	// corruption; a byte past big is.
	p, f, _, big := newSharingPair(t, "small", 256, "big", 4096)
	ptr := ptrOf(t, big)
	require.NoError(t, f.Memset(0, ptr, 9, 4096))
	require.NoError(t, f.DeviceSynchronize(0))
	require.NoError(t, p.Check())
	require.NoError(t, f.Memset(0, ptr.Add(4096), 9, 1))
	require.NoError(t, f.DeviceSynchronize(0))
	assert.Equal(t, "big", corruption(t, p.Check()).Name)
}

func TestReleaseAllChecksAndPoisons(t *testing.T) {
	p, f := newUncheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithGuards(256))
	b, err := p.WantDevice(1000, pool.Name("x"))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	ptr, err := b.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, ptr, 1, 1001))
	err = p.ReleaseAll()
	assert.Equal(t, "x", corruption(t, err).Name, "ReleaseAll checks the guards")
	assert.Zero(t, p.Stats().Device.Placed, "and releases all the same")

	// The arena's memory is still the pool's: what x held is poison now.
	got := make([]byte, 1000)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(ptr, 1000), cudart.DeviceToHost))
	assert.Equal(t, bytes.Repeat([]byte{pool.ReleasedPoison}, 1000), got)
	require.NoError(t, p.ReleaseAll(), "nothing placed, nothing damaged")
}

func TestGuardStatsAndMisuse(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithGuards(1))
	_, err := p.WantDevice(100)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	st := p.Stats().Device
	assert.Equal(t, uint64(256), st.Guards, "1 byte of guard is rounded up to 256")
	assert.Equal(t, uint64(156), st.Padding)
	assert.Equal(t, uint64(512), st.Used)

	q, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	assert.ErrorIs(t, q.Check(), pool.ErrNoGuards)
	_, err = pool.New(cudarttest.NewFakeT(t), pool.WithGuards(^uint64(0)))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	require.NoError(t, q.Close())
	assert.ErrorIs(t, q.Check(), pool.ErrClosed)
	var nilPool *pool.Pool
	assert.True(t, errors.Is(nilPool.Check(), pool.ErrClosed))
}

// A host arena's guard fills are the pool's upkeep, but its buffers are
// annotated all the same: a copy from one is no memcheck fault.
func TestGuardedHostBuffersAreAnnotated(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(1<<20), pool.WithGuards(256))
	dev := pooltest.Device(t, p, 4096, pool.Name("dev"))
	host := pooltest.Host(t, p, 4096, pool.Name("host"))
	require.NoError(t, p.Satisfy())
	assert.NoError(t, f.Memcpy(0, cudart.DeviceMem(pooltest.Ptr(t, dev), 4096), cudart.HostMem(pooltest.Bytes(t, host)), cudart.HostToDevice))
}
