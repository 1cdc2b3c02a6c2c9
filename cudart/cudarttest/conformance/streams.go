package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func (s *suite) testStreams(t *testing.T, st cudart.Streams) {
	const n = 128*kib + 9
	in, out := s.pinned(t, n), s.pinned(t, n)
	d := s.malloc(t, n)
	t.Run("CreatedStream", func(t *testing.T) {
		stream, err := st.StreamCreate(s.dev)
		require.NoError(t, err)
		once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(s.dev, stream) })
		copy(in, pattern(50, n))
		clear(out)
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(in), cudart.HostToDevice, stream))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(d, n), cudart.DeviceToHost, stream))
		require.NoError(t, st.StreamSynchronize(s.dev, stream))
		assert.True(t, bytes.Equal(in, out), "async round trip on one stream changed the bytes")
	})
	t.Run("Query", func(t *testing.T) {
		// Copies that take the GPU far longer than the host takes to queue
		// them: the query that follows finds them running. The fake's
		// first query of work it has not seen says not done, so it says
		// the same.
		stream, err := st.StreamCreate(s.dev)
		require.NoError(t, err)
		once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(s.dev, stream) })
		done, err := st.StreamQuery(s.dev, stream)
		require.NoError(t, err)
		assert.True(t, done, "a stream with nothing queued has completed")
		const big = 32 * mib
		a, b := s.malloc(t, big), s.malloc(t, big)
		for range 16 {
			require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(b, big), cudart.DeviceMem(a, big), cudart.DeviceToDevice, stream))
		}
		done, err = st.StreamQuery(s.dev, stream)
		require.NoError(t, err)
		assert.False(t, done, "16 copies of 32 MiB queued on the stream have not completed as the query returns")
		legacy, err := st.StreamQuery(s.dev, 0)
		require.NoError(t, err)
		assert.False(t, legacy, "the legacy default stream, which waits for every blocking stream's work, has not completed either")
		require.NoError(t, st.StreamSynchronize(s.dev, stream))
		for _, q := range []cudart.Stream{stream, 0} {
			done, err = st.StreamQuery(s.dev, q)
			require.NoError(t, err)
			assert.True(t, done, "stream 0x%x after the synchronisation", uintptr(q))
		}
	})
	t.Run("OrderWithTheLegacyStream", func(t *testing.T) {
		// The legacy default stream waits for earlier work of blocking
		// streams, and they for its earlier work.
		stream, err := st.StreamCreate(s.dev)
		require.NoError(t, err)
		once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(s.dev, stream) })
		require.NoError(t, s.rt.Memset(s.dev, d, 0x6b, n), "on the legacy stream")
		clear(out)
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(d, n), cudart.DeviceToHost, stream))
		require.NoError(t, st.StreamSynchronize(s.dev, stream))
		assert.Equal(t, -1, filled(out, 0x6b), "a copy on a stream sees a memset issued before it on the legacy stream")
		copy(in, pattern(52, n))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(in), cudart.HostToDevice, stream))
		assert.True(t, bytes.Equal(in, s.read(t, d, n)), "cudaMemcpy sees a copy issued before it on a stream")
	})
	t.Run("OtherDevicesStream", func(t *testing.T) {
		// CUDA runs a copy on the stream it is given, even one of a device
		// other than the current one.
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		if count < 2 {
			t.Skip("one device")
		}
		other := (s.dev + 1) % count
		stream, err := st.StreamCreate(other)
		require.NoError(t, err)
		once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(other, stream) })
		copy(in, pattern(53, n))
		clear(out)
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(in), cudart.HostToDevice, stream))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(d, n), cudart.DeviceToHost, stream))
		require.NoError(t, st.StreamSynchronize(other, stream))
		assert.True(t, bytes.Equal(in, out), "a round trip on device %d's stream", other)
	})
	t.Run("StreamDevice", func(t *testing.T) {
		// A created stream is its device's; the legacy default stream (0),
		// cudaStreamLegacy (1) and cudaStreamPerThread (2) name the
		// selected device's, as CUDA documents of the special handles for
		// a stream's context (cuStreamGetCtx).
		stream, err := st.StreamCreate(s.dev)
		require.NoError(t, err)
		got, err := st.StreamDevice(s.dev, stream)
		require.NoError(t, err)
		assert.Equal(t, s.dev, got, "a stream of device %d", s.dev)
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		for d := range count {
			for _, special := range []cudart.Stream{0, 1, 2} {
				got, err := st.StreamDevice(d, special)
				require.NoError(t, err)
				assert.Equal(t, d, got, "stream 0x%x with device %d selected", uintptr(special), d)
			}
			if d == s.dev {
				continue
			}
			other, err := st.StreamCreate(d)
			require.NoError(t, err)
			once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(d, other) })
			got, err := st.StreamDevice(s.dev, other)
			require.NoError(t, err)
			assert.Equal(t, d, got, "device %d's stream, asked with device %d selected", d, s.dev)
		}
		require.NoError(t, st.StreamDestroy(s.dev, stream))
		_, err = st.StreamDevice(s.dev, stream)
		require.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "a destroyed stream is refused before CUDA sees it")
	})
	t.Run("DefaultStream", func(t *testing.T) {
		copy(in, pattern(51, n))
		clear(out)
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(d, n), cudart.HostMem(in), cudart.Default, 0))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(d, n), cudart.Default, 0))
		require.NoError(t, st.StreamSynchronize(s.dev, 0))
		assert.True(t, bytes.Equal(in, out), "async round trip on the default stream changed the bytes")
	})
}
