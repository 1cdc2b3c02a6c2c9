package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestDeviceResetDestroysTheContextsHandles: a reset with no fault destroys
// the device's streams, events, modules, graphs and instantiations, as the
// package docs say, so each handle from before is refused, and nothing is
// left for the leak check; the device works after it, and another device's
// handles are untouched.
func TestDeviceResetDestroysTheContextsHandles(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	g := captureKernels(t, f, 1)
	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	e, err := f.EventCreate(0)
	require.NoError(t, err)
	m, err := f.ModuleLoadData(0, probePTX)
	require.NoError(t, err)
	other, err := f.EventCreate(1)
	require.NoError(t, err)

	require.NoError(t, f.DeviceReset(0))
	assert.Equal(t, cudarttest.Usage{Events: 1}, f.Live(), "only device 1's event is left")
	refused := map[string]error{
		"StreamSynchronize": f.StreamSynchronize(0, s),
		"EventRecord":       f.EventRecord(0, e, 0),
		"EventDestroy":      f.EventDestroy(0, e),
		"ModuleUnload":      f.ModuleUnload(0, m),
		"GraphLaunch":       f.GraphLaunch(0, x, 0),
		"GraphExecDestroy":  f.GraphExecDestroy(0, x),
		"GraphDestroy":      f.GraphDestroy(0, g),
	}
	for name, err := range refused {
		assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "%s of a handle from before the reset", name)
	}
	_, err = f.ModuleGetFunction(0, m, "probe")
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "ModuleGetFunction of a module from before the reset")

	e, err = f.EventCreate(0)
	require.NoError(t, err, "the device works after the reset")
	require.NoError(t, f.EventRecord(0, e, 0))
	require.NoError(t, f.EventSynchronize(0, e))
	require.NoError(t, f.EventDestroy(0, e))
	require.NoError(t, f.EventDestroy(1, other), "device 1's event outlives device 0's reset")
}
