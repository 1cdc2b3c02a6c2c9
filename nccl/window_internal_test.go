package nccl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// noWindows is a library before NCCL 2.27, without window registration.
type noWindows struct{ ncclabi.Backend }

func (noWindows) Has(c ncclabi.Call) bool {
	return c != ncclabi.CommWindowRegister && c != ncclabi.CommWindowDeregister
}

// A library without windows refuses them with ErrNotSupported, naming
// itself, before anything is called.
func TestWindowsNeedALibraryWithThem(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	l, err := Open(f)
	require.NoError(t, err)
	require.True(t, l.HasWindows(), "the fake is NCCL 2.28")
	comms, err := l.InitAll([]int{0, 1})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			assert.NoError(t, c.Destroy())
		}
	})
	l.be = noWindows{l.be}
	assert.False(t, l.HasWindows())
	_, err = comms[0].RegisterWindow(0x1000, 4096, WindowDefault)
	require.ErrorIs(t, err, ErrNotSupported)
	assert.ErrorContains(t, err, "NCCL 2.28.9 (fake) has no windows")
}
