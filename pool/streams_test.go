package pool_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

func TestReleaseAndCloseWaitForTheirStreamsOnly(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s1, s2 := pooltest.Stream(t, f, 0), pooltest.Stream(t, f, 0)
	p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s1))
	require.NoError(t, err)
	require.NoError(t, p.UseStreams(s2, s1), "a stream given twice is waited for once")
	pooltest.Device(t, p, 256)
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
	s := pooltest.Stream(t, f, 0)
	require.NoError(t, f.FailCall("cudaMalloc", cudart.ErrMemoryAllocation.Code))
	_, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s))
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	f.ClearFaults()
	assert.Zero(t, f.Live().Events)
}

func TestStreamsCUDADoesNotKnowAreRefused(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	dead, err := f.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, f.StreamDestroy(0, dead))
	for name, s := range map[string]cudart.Stream{"never created": 12345, "destroyed": dead} {
		_, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s))
		assert.ErrorIs(t, err, pool.ErrInvalidStream, name)
		assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, name)
		assert.ErrorContains(t, err, fmt.Sprintf("stream %#x", uintptr(s)), name)
		assert.Zero(t, f.Live().Events, "%s: the failed New destroyed its events", name)
	}

	good := pooltest.Stream(t, f, 0)
	p := pooltest.New(t, f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	assert.ErrorIs(t, p.UseStreams(good, 12345), pool.ErrInvalidStream)
	assert.Zero(t, f.Live().Events, "a refused UseStreams adds no stream")
	f.ResetCalls()
	require.NoError(t, p.ReleaseAll())
	assert.Equal(t, []string{"cudaDeviceSynchronize"}, f.Calls(), "the pool still waits for the whole device")
}

func TestADestroyedStreamIsNamedAndCanBeForgotten(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s1, err := f.StreamCreate(0)
	require.NoError(t, err)
	s2 := pooltest.Stream(t, f, 0)
	p := pooltest.New(t, f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s1, s2))
	pooltest.Device(t, p, 256)
	require.NoError(t, p.Satisfy())

	require.NoError(t, f.StreamDestroy(0, s1), "destroyed while the pool waits for it")
	err = p.ReleaseAll()
	require.ErrorIs(t, err, pool.ErrInvalidStream)
	assert.ErrorContains(t, err, fmt.Sprintf("stream %#x", uintptr(s1)), "the error names the stream")
	assert.Equal(t, 1, p.Stats().Device.Placed, "nothing was reset")

	assert.ErrorIs(t, p.ForgetStreams(s1, 777), pool.ErrInvalidStream, "a stream the pool does not wait for")
	require.NoError(t, p.ForgetStreams(s1))
	assert.Equal(t, 1, f.Live().Events, "s1's event is destroyed, s2's kept")
	f.ResetCalls()
	require.NoError(t, p.ReleaseAll())
	assert.Equal(t, []string{"cudaEventRecord", "cudaEventSynchronize"}, f.Calls(), "the pool waits for s2 only")
	assert.ErrorIs(t, p.ForgetStreams(s1), pool.ErrInvalidStream, "forgotten already")

	require.NoError(t, p.ForgetStreams(s2))
	f.ResetCalls()
	require.NoError(t, p.ReleaseAll())
	assert.Equal(t, []string{"cudaDeviceSynchronize"}, f.Calls(), "with no stream left, the whole device")
}

// A stream of another device is refused at New and UseStreams, naming both
// devices: the pool's event cannot be recorded there.
func TestAnotherDevicesStreamIsRefused(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	s1 := pooltest.Stream(t, f, 1)
	_, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s1))
	require.ErrorIs(t, err, pool.ErrInvalidStream)
	assert.Contains(t, err.Error(), "device 1's, the pool device 0's")
	p := pooltest.New(t, f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	require.ErrorIs(t, p.UseStreams(s1), pool.ErrInvalidStream)
}

// After Close, ForgetStreams has nothing left to forget and returns nil,
// so that cleanups may run in either order; the event of a stream that a
// failed Close kept it destroys.
func TestForgetStreamsAfterClose(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		f := cudarttest.NewFakeT(t)
		s := pooltest.Stream(t, f, 0)
		p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s))
		require.NoError(t, err)
		require.NoError(t, p.Close())
		assert.NoError(t, p.ForgetStreams(s))
		assert.NoError(t, p.ForgetStreams(777), "Close forgot every stream")
		assert.Equal(t, 0, f.Live().Events)
	})
	t.Run("a failed Close kept the event", func(t *testing.T) {
		f := cudarttest.NewFakeT(t)
		s := pooltest.Stream(t, f, 0)
		p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithStreams(s))
		require.NoError(t, err)
		require.NoError(t, f.FailCallNth("cudaEventDestroy", 1, cudart.ErrInvalidValue.Code))
		require.Error(t, p.Close())
		assert.Equal(t, 1, f.Live().Events, "kept, to retry")
		assert.NoError(t, p.ForgetStreams(s))
		assert.Equal(t, 0, f.Live().Events, "destroyed by ForgetStreams")
		assert.NoError(t, p.Close())
	})
}
