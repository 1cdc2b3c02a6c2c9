package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

func TestNilRuntimeOptionsAndHandlesAreRefused(t *testing.T) {
	_, err := vmem.NewArena(nil, 0, 1<<20)
	assert.ErrorIs(t, err, vmem.ErrInvalidOption)
	_, err = vmem.NewVector(nil, 0)
	assert.ErrorIs(t, err, vmem.ErrInvalidOption)
	f := cudarttest.NewFakeT(t)
	_, err = vmem.NewArena(f, 0, 1<<20, nil)
	assert.ErrorIs(t, err, vmem.ErrInvalidOption)
	_, err = vmem.NewVector(f, 0, vmem.WithChunk(0), nil)
	assert.ErrorContains(t, err, "option 2 of 2 is nil")

	var a *vmem.Arena
	assert.ErrorIs(t, a.Ensure(1), vmem.ErrClosed)
	assert.ErrorIs(t, a.Trim(0), vmem.ErrClosed)
	assert.ErrorIs(t, a.Close(), vmem.ErrClosed)
	assert.Zero(t, a.Base())
	assert.Zero(t, a.Max())
	assert.Zero(t, a.Mapped())
	var v *vmem.Vector
	assert.ErrorIs(t, v.Grow(1), vmem.ErrClosed)
	assert.ErrorIs(t, v.Reserve(1), vmem.ErrClosed)
	assert.ErrorIs(t, v.Close(), vmem.ErrClosed)
	assert.Zero(t, v.Ptr())
	assert.Zero(t, v.Size())
	assert.Zero(t, v.Reserved())
}
