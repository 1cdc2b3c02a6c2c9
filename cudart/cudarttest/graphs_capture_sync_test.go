package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestFakeSynchronisingCallsDuringCapture: the calls that synchronise the
// device refuse as cudaDeviceSynchronize does while a stream captures, and
// a memset of managed memory, on the legacy stream, as a legacy stream
// synchronisation does; cudaMalloc is refused in a global capture; each
// invalidates the capture, and the memory stays allocated.
func TestFakeSynchronisingCallsDuringCapture(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	d, err := f.Malloc(0, 256)
	require.NoError(t, err)
	h, err := f.MallocHost(0, 256)
	require.NoError(t, err)
	m, err := f.MallocManaged(0, 256, cudart.MemAttachGlobal)
	require.NoError(t, err)
	reg := make([]byte, 4096)
	require.NoError(t, f.HostRegister(0, reg, cudart.HostRegisterDefault))
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"Free", func() error { return f.Free(0, d) }, cudart.ErrStreamCaptureUnsupported},
		{"FreeHost", func() error { return f.FreeHost(h) }, cudart.ErrStreamCaptureUnsupported},
		{"HostUnregister", func() error { return f.HostUnregister(0, reg) }, cudart.ErrStreamCaptureUnsupported},
		{"Memset of managed memory", func() error { return f.Memset(0, m, 1, 256) }, cudart.ErrStreamCaptureImplicit},
		{"Malloc, unsafe in a global capture", func() error { _, err := f.Malloc(0, 256); return err }, cudart.ErrStreamCaptureUnsupported},
	} {
		require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeGlobal))
		assert.ErrorIs(t, c.call(), c.want, c.name)
		_, err := f.StreamEndCapture(0, s)
		assert.ErrorIs(t, err, cudart.ErrStreamCaptureInvalidated, c.name)
	}
	require.NoError(t, f.Free(0, d), "still allocated")
	require.NoError(t, f.FreeHost(h))
	require.NoError(t, f.Free(0, m))
	require.NoError(t, f.HostUnregister(0, reg))
	require.NoError(t, f.StreamDestroy(0, s))
}
