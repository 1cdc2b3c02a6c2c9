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
	var v *vmem.Vector
	for name, err := range map[string]error{
		"Arena.Ensure": a.Ensure(1), "Arena.Trim": a.Trim(0), "Arena.Close": a.Close(),
		"Vector.Grow": v.Grow(1), "Vector.Reserve": v.Reserve(1), "Vector.Close": v.Close(),
	} {
		assert.ErrorIs(t, err, vmem.ErrClosed, name)
	}
	for name, got := range map[string]any{
		"Arena.Base": a.Base(), "Arena.Max": a.Max(), "Arena.Mapped": a.Mapped(),
		"Vector.Ptr": v.Ptr(), "Vector.Size": v.Size(), "Vector.Reserved": v.Reserved(),
	} {
		assert.Zero(t, got, name)
	}
}
