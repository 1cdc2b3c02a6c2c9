package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestSubAllocatedBuffersAreAnnotatedByTheirOwner: a SubAllocated buffer is
// no region until its owner gives its parts; an access outside them fails,
// naming the part it was in when it was one; Step and upkeep keep them, and
// ReleaseAll forgets them.
func TestSubAllocatedBuffersAreAnnotatedByTheirOwner(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithGuards(256))
	require.NoError(t, err)
	plain, err := p.WantDevice(1024, pool.Name("plain"))
	require.NoError(t, err)
	carved, err := p.WantDevice(4096, pool.Name("pages"), pool.SubAllocated())
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	base := ptrOf(t, carved)
	arena := ptrOf(t, plain)
	names := func() []string {
		var out []string
		for _, r := range regionsOf(t, f, arena) {
			out = append(out, r.Name)
		}
		return out
	}
	assert.Equal(t, []string{"plain"}, names(), "the carved buffer is no region of its own")

	parts := []cudart.MemRegion{{Addr: base, Size: 1024, Name: "page 0"}, {Addr: base + 2048, Size: 1024, Name: "page 2"}}
	require.NoError(t, carved.Annotate(parts))
	assert.Equal(t, []string{"plain", "page 0", "page 2"}, names())
	require.NoError(t, p.Check(), "guards' upkeep keeps the parts")
	assert.Equal(t, []string{"plain", "page 0", "page 2"}, names())

	read := func(at cudart.DevicePtr) error {
		b := make([]byte, 16)
		return f.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(at, 16), cudart.DeviceToHost)
	}
	require.NoError(t, read(base+2048))
	require.NoError(t, carved.Annotate(parts[:1]))
	err = read(base + 2048)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), `it was in "page 2" (1.0 KiB)`)
	require.NoError(t, f.DeviceReset(0), "the fault is sticky")
	require.ErrorIs(t, p.Close(), pool.ErrDeviceReset)
}

func TestAnnotateIsRefusedWhereItCannotHold(t *testing.T) {
	p, _ := newCheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	plain, err := p.WantDevice(1024)
	require.NoError(t, err)
	carved, err := p.WantDevice(1024, pool.SubAllocated())
	require.NoError(t, err)
	require.ErrorIs(t, carved.Annotate(nil), pool.ErrNotPlaced)
	require.NoError(t, p.Satisfy())
	base := ptrOf(t, carved)
	require.ErrorIs(t, plain.Annotate(nil), pool.ErrInvalidRequest)
	for _, r := range []cudart.MemRegion{
		{Addr: base - 1, Size: 1},
		{Addr: base + 1024, Size: 1},
		{Addr: base + 1000, Size: 25},
		{Addr: base, Size: 0},
	} {
		assert.ErrorIs(t, carved.Annotate([]cudart.MemRegion{r}), pool.ErrInvalidRequest, "%v", r)
	}
	require.NoError(t, carved.Annotate([]cudart.MemRegion{{Addr: base + 1000, Size: 24}}))
	require.NoError(t, p.ReleaseAll())
	require.ErrorIs(t, carved.Annotate(nil), pool.ErrReleased)
}
