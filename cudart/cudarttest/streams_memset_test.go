package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestFakeMemsetAsyncInStreamOrder: an async memset is checked at the call
// and takes effect when its stream's work runs.
func TestFakeMemsetAsyncInStreamOrder(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := f.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, p)) }()
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.StreamDestroy(0, s)) }()
	assert.ErrorIs(t, f.MemsetAsync(0, p, 1, 65, s), cudart.ErrInvalidValue, "one byte past the end")

	require.NoError(t, f.MemsetAsync(0, p, 7, 64, s))
	done, err := f.StreamQuery(0, s)
	require.NoError(t, err)
	assert.False(t, done, "queued")
	require.NoError(t, f.StreamSynchronize(0, s))
	out := make([]byte, 64)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, 64), cudart.DeviceToHost))
	assert.Equal(t, []byte{7, 7}, []byte{out[0], out[63]})
}
