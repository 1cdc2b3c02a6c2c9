package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func (s *suite) testManaged(t *testing.T, m cudart.Managed) {
	const n = mib
	free, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	if free < 4*n {
		t.Skipf("only %d bytes free on device %d", free, s.dev)
	}
	p, err := m.MallocManaged(s.dev, n, cudart.MemAttachGlobal)
	require.NoError(t, err)
	require.NotZero(t, p)
	once(t, calls.Free, func() error { return s.rt.Free(s.dev, p) })
	assert.True(t, align.Is(uint64(p), align.CUDA), "managed memory %s is 256-byte aligned", p)

	want := pattern(60, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(p, n), cudart.HostMem(want), cudart.Default))
	require.NoError(t, m.MemPrefetchAsync(s.dev, p, n, s.dev, 0), "prefetch to the device")
	require.NoError(t, s.rt.DeviceSynchronize(s.dev))
	require.NoError(t, m.MemPrefetchAsync(s.dev, p, n, cudart.CPUDevice, 0), "prefetch to the host")
	require.NoError(t, s.rt.DeviceSynchronize(s.dev))
	got := make([]byte, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(got), cudart.DeviceMem(p, n), cudart.Default))
	assert.True(t, bytes.Equal(want, got), "managed memory changed across prefetches")
}
