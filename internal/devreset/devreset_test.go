package devreset_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/devreset"
)

func TestWatchSeesAResetOfItsDeviceOnly(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	w0, w1 := devreset.Start(f, 0), devreset.Start(f, 1)
	assert.False(t, w0.Reset())
	assert.Equal(t, w0, devreset.Start(f, 0), "two watches of the same count are equal")
	require.NoError(t, f.DeviceReset(0))
	assert.True(t, w0.Reset())
	assert.False(t, w1.Reset(), "device 1 was not reset")
	assert.NotEqual(t, w0, devreset.Start(f, 0))
	assert.False(t, devreset.Start(struct{}{}, 0).Reset(), "a runtime that counts no resets")
	assert.False(t, devreset.Watch{}.Reset())
}
