package pinned_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
)

func TestNilRuntimeOptionsAndHandlesAreRefused(t *testing.T) {
	_, err := pinned.Alloc(nil, 0, 1<<20)
	assert.ErrorIs(t, err, pinned.ErrInvalidOption)
	_, err = pinned.Register(nil, 0, make([]byte, 4096), 0)
	assert.ErrorIs(t, err, pinned.ErrInvalidOption)
	_, err = pinned.Alloc(cudarttest.NewFakeT(t), 0, 1<<20, nil)
	assert.ErrorContains(t, err, "option 1 of 1 is nil")

	var r *pinned.Region
	assert.ErrorIs(t, r.Free(), pinned.ErrFreed)
	_, err = r.DevicePtr()
	assert.ErrorIs(t, err, pinned.ErrFreed)
	assert.Nil(t, r.Bytes())
	var g *pinned.Registration
	assert.ErrorIs(t, g.Unregister(), pinned.ErrNotRegistered)
	_, err = g.DevicePtr()
	assert.ErrorIs(t, err, pinned.ErrNotRegistered)
}
