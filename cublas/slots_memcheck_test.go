package cublas_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// A GEMM in a slot whose A is one column short reads into the slot's next
// buffer: the strict fake sees each of a held slot's buffers as a region of
// its own, so the GEMM faults naming the operand and the buffer "A", where
// the whole slot had been one region and the read went unnoticed.
func TestASlotsGemmPastItsBufferNamesTheBuffer(t *testing.T) {
	const n = 16
	rt := cudarttest.NewFakeT(t)
	lib, err := cublas.Open(rt)
	require.NoError(t, err)
	pr := pool.NewProfile("gemm")
	var refs [3]pool.Ref
	for i, b := range []struct {
		name string
		cols uint64
	}{{"A", n - 1}, {"B", n}, {"C", n}} {
		refs[i], err = pr.Device(4*n*b.cols, pool.Name(b.name))
		require.NoError(t, err)
	}
	s, err := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{lib.ForSlots(0)}})
	require.NoError(t, err)
	t.Cleanup(func() {
		// The fault is sticky: a reset ends it and takes the slots' memory,
		// streams and handles with it.
		require.NoError(t, rt.DeviceReset(0))
		require.ErrorIs(t, s.Close(), pool.ErrDeviceReset)
	})
	sl, err := s.Acquire(context.Background(), "gemm")
	require.NoError(t, err)
	var p [3]cudart.DevicePtr
	for i, r := range refs {
		p[i], err = sl.Ptr(r)
		require.NoError(t, err)
	}
	h, err := pool.Attached[cublas.Lent](sl)
	require.NoError(t, err)
	require.NoError(t, h.Gemm(cublas.Gemm{M: n, N: n, K: n, Alpha: 1, A: f32(p[0], n), B: f32(p[1], n), C: f32(p[2], n)}), "cuBLAS queues it")
	st, err := sl.Stream()
	require.NoError(t, err)
	err = rt.StreamSynchronize(0, st)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	t.Log(err)
	assert.Contains(t, err.Error(), "A (N, 16×16 stored, ld 16, CUDA_R_32F)")
	assert.Contains(t, err.Error(), fmt.Sprintf(`past the end of "A (slot %d)" (960 B), the buffer A starts in`, sl.Index()))
}
