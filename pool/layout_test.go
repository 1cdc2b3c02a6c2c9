package pool_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

func TestPlacementString(t *testing.T) {
	for _, tt := range []struct {
		pl   pool.Placement
		want string
	}{
		{pool.Placement{Name: "conv1.out", Arena: pool.Device, Offset: 256, Size: 16 * mib, First: 0, Last: 3},
			`device "conv1.out" at 0x100, 16 MiB, steps 0..3`},
		{pool.Placement{Arena: pool.Host, Size: 1000, Whole: true}, `host (unnamed) at 0x0, 1000 B, all steps`},
	} {
		assert.Equal(t, tt.want, tt.pl.String())
	}
}

func TestLayoutPrintsATable(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc))
	_, err := p.WantDevice(1000, pool.Name("a"), pool.Live(0, 1))
	require.NoError(t, err)
	_, err = p.WantDevice(300, pool.Name("b"), pool.Live(2, 3))
	require.NoError(t, err)
	_, err = p.WantHost(256)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, ""+
		"arena   name       offset  end    size    steps\n"+
		"device  \"a\"        0x0     0x3e8  1000 B  steps 0..1\n"+
		"device  \"b\"        0x0     0x12c  300 B   steps 2..3\n"+
		"host    (unnamed)  0x0     0x100  256 B   all steps\n",
		fmt.Sprint(p.Layout()))
}
