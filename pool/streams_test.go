package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

func TestReleaseAndCloseWaitForTheirStreamsOnly(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s1, err := f.StreamCreate(0)
	require.NoError(t, err)
	s2, err := f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, f.StreamDestroy(0, s1))
		assert.NoError(t, f.StreamDestroy(0, s2))
	})
	p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s1))
	require.NoError(t, err)
	require.NoError(t, p.UseStreams(s2, s1), "a stream given twice is waited for once")
	_, err = p.WantDevice(256)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())

	f.ResetCalls()
	require.NoError(t, p.ReleaseAll())
	waits := []string{"cudaEventRecord", "cudaEventSynchronize", "cudaEventRecord", "cudaEventSynchronize"}
	assert.Equal(t, waits, f.Calls(), "one event a stream, no device-wide wait")
	f.ResetCalls()
	require.NoError(t, p.Close())
	assert.Equal(t, waits, f.Calls()[:4], "Close waits the same way before it frees")
	assert.Contains(t, f.Calls(), "cudaEventDestroy")
	assert.Zero(t, f.Live().Events, "Close destroys the pool's events")
}

func TestStreamsNeedEvents(t *testing.T) {
	rt := struct{ cudart.Runtime }{cudarttest.NewFakeT(t)}
	_, err := pool.New(rt, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(1))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.ErrorContains(t, err, "cudart.Events")
	p, err := pool.New(rt, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	require.NoError(t, err)
	assert.ErrorIs(t, p.UseStreams(1), pool.ErrInvalidOption)
	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.UseStreams(1), pool.ErrClosed)
}

func TestAFailedNewDestroysTheEventsItMade(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.StreamDestroy(0, s)) })
	require.NoError(t, f.FailCall("cudaMalloc", cudart.ErrMemoryAllocation.Code))
	_, err = pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s))
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	f.ClearFaults()
	assert.Zero(t, f.Live().Events)
}
