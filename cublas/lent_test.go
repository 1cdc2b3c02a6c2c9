package cublas_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/pool"
)

var errEnded = errors.New("lease ended")

// generation is a Guard: lease tok holds while the count is tok.
type generation struct{ n atomic.Uint64 }

func (g *generation) LeaseErr(tok uint64) error {
	if g.n.Load() != tok {
		return fmt.Errorf("%w: lease %d", errEnded, tok)
	}
	return nil
}

// Each lease starts from the owner's settings; an ended lease refuses
// everything; the owner's calls see the owner's settings.
func TestLeasesStartFromTheOwnersSettings(t *testing.T) {
	rt, _, h, ws, mats := setup(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(cublas.MinWorkspace), pool.WithHostBytes(0))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	other, err := p.WantDevice(cublas.MinWorkspace, pool.Name("the lease's workspace"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	pm, err := mats.Ptr()
	require.NoError(t, err)
	g := cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(pm, 4), B: f32(pm, 4), C: f32(pm+256, 4)}
	var gen generation
	first := h.Lend(&gen, 0)
	require.NoError(t, first.SetMathMode(cublas.MathTF32))
	require.NoError(t, first.SetWorkspace(other))
	require.NoError(t, first.Gemm(g))
	mode, err := first.MathMode()
	require.NoError(t, err)
	assert.Equal(t, cublas.MathTF32, mode)
	got, err := first.Workspace()
	require.NoError(t, err)
	assert.Same(t, other, got)
	owned, err := h.MathMode()
	require.NoError(t, err)
	assert.Equal(t, cublas.MathDefault, owned, "the owner's setting")

	gen.n.Add(1)
	require.ErrorIs(t, first.Gemm(g), errEnded)
	require.ErrorIs(t, first.SetMathMode(cublas.MathDefault), errEnded)
	_, err = first.Stream()
	require.ErrorIs(t, err, errEnded)

	second := h.Lend(&gen, 1)
	mode, err = second.MathMode()
	require.NoError(t, err)
	assert.Equal(t, cublas.MathDefault, mode, "before its first call")
	require.NoError(t, second.Gemm(g))
	got, err = second.Workspace()
	require.NoError(t, err)
	assert.Same(t, ws, got)
	require.ErrorIs(t, second.SetStream(0), cublas.ErrInvalidStream, "not the owner's stream")
	s, err := h.Stream()
	require.NoError(t, err)
	require.NoError(t, second.SetStream(s))

	// The owner's own call takes its settings back from a lease.
	require.NoError(t, second.SetMathMode(cublas.MathTF32))
	require.NoError(t, h.Gemm(g))
	mode, err = second.MathMode()
	require.NoError(t, err)
	assert.Equal(t, cublas.MathDefault, mode, "the owner's call set the handle back")

	require.NoError(t, h.Close())
	require.ErrorIs(t, second.Gemm(g), cublas.ErrClosed)
}

// A Guard that panics leaves the handle usable.
func TestAPanickingGuardHoldsNoLock(t *testing.T) {
	_, _, h, _, _ := setup(t)
	b := h.Lend(panicking{}, 0)
	require.Panics(t, func() { _ = b.SetMathMode(cublas.MathTF32) })
	require.NoError(t, h.SetMathMode(cublas.MathDefault))
}

type panicking struct{}

func (panicking) LeaseErr(uint64) error { panic("guard") }
