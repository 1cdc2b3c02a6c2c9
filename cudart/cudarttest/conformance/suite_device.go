package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func (s *suite) testDevice(t *testing.T) {
	d, ok := s.rt.(cudart.Device)
	if !ok {
		t.Skip("runtime does not implement cudart.Device")
	}
	t.Run("SetDevice", func(t *testing.T) {
		assert.NoError(t, d.SetDevice(s.dev))
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		assert.ErrorIs(t, d.SetDevice(count), cudart.ErrInvalidDevice)
		assert.NoError(t, d.SetDevice(s.dev), "the suite's device again")
	})
	t.Run("Versions", func(t *testing.T) {
		rv, err := d.RuntimeVersion()
		require.NoError(t, err)
		assert.Positive(t, rv)
		dv, err := d.DriverVersion()
		require.NoError(t, err)
		assert.Positive(t, dv)
	})
	t.Run("Name", func(t *testing.T) {
		name, err := d.DeviceName(s.dev)
		require.NoError(t, err)
		assert.NotEmpty(t, name)
	})
	t.Run("MallocHeapLimit", func(t *testing.T) {
		old, err := d.DeviceGetLimit(s.dev, cudart.LimitMallocHeapSize)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.DeviceSetLimit(s.dev, cudart.LimitMallocHeapSize, old)) })
		want := max(2*old, 16*mib)
		require.NoError(t, d.DeviceSetLimit(s.dev, cudart.LimitMallocHeapSize, want))
		got, err := d.DeviceGetLimit(s.dev, cudart.LimitMallocHeapSize)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got, want, "CUDA may round the heap up, never down")
	})
	t.Run("UnknownLimit", func(t *testing.T) {
		err := d.DeviceSetLimit(s.dev, cudart.Limit(0x7fff), mib)
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a value that is no cudaLimit")
		_, err = d.DeviceGetLimit(s.dev, cudart.Limit(0x7fff))
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a value that is no cudaLimit")
	})
}

// testReset: cudaDeviceReset destroys what the device holds, its memory
// included, and the device works after it.
func (s *suite) testReset(t *testing.T) {
	d, ok := s.rt.(cudart.Device)
	if !ok {
		t.Skip("runtime does not implement cudart.Device")
	}
	const n = 64 * mib
	_, err := s.rt.Malloc(s.dev, n)
	require.NoError(t, err, "memory the reset frees")
	during, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	require.NoError(t, d.DeviceReset(s.dev))
	after, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after, during+n/2, "the reset returned the memory")
	p := s.malloc(t, mib)
	want := pattern(90, mib)
	s.write(t, p, want)
	assert.True(t, bytes.Equal(want, s.read(t, p, mib)), "the device works after the reset")
}
