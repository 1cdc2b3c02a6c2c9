package conformance

import (
	"errors"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// Groups are cuBLAS's groups of the conformance suite, for its runner:
//
//	conformance.TestRuntime(t, rt, conformance.WithGroups(blasconformance.Groups()...))
//
// BLAS (GEMMs of every type pair the binding offers against float64 within
// the documented bound, IEEE propagation of NaN and Inf, the statuses of
// bad arguments, workspaces, streams of other devices, and the nodes a
// captured GEMM makes) and BLASCharge (what a handle takes of the device).
// They skip where cuBLAS cannot be loaded.
func Groups() []conformance.Group {
	return []conformance.Group{
		{Name: "BLAS", Run: func(t *testing.T, rt cudart.Runtime, device int) { (&suite{rt, device}).testBLAS(t) }},
		{Name: "BLASCharge", Run: func(t *testing.T, rt cudart.Runtime, device int) { (&suite{rt, device}).testBLASCharge(t) }},
	}
}

// suite is a run of a group: the runtime and device the suite runs on.
type suite struct {
	rt  cudart.Runtime
	dev int
}

// mib is a MiB, in bytes.
const mib = 1 << 20

// need is rt as the capability T, or skips t when rt lacks it.
func need[T any](t *testing.T, rt cudart.Runtime) T {
	t.Helper()
	c, ok := rt.(T)
	if !ok {
		t.Skipf("the runtime (%T) lacks %T", rt, (*T)(nil))
	}
	return c
}

// cleanup runs free, which makes call, when t ends.
func cleanup(t testing.TB, call string, free func() error) {
	t.Cleanup(func() { assert.NoError(t, free(), "%s at cleanup", call) })
}

// malloc allocates n bytes of device memory, freed at cleanup.
func (s *suite) malloc(t testing.TB, n uint64) cudart.DevicePtr {
	t.Helper()
	p, err := s.rt.Malloc(s.dev, n)
	require.NoError(t, err, "cudaMalloc")
	cleanup(t, "cudaFree", func() error { return s.rt.Free(s.dev, p) })
	return p
}

// stream creates a stream destroyed at cleanup.
func (s *suite) stream(t *testing.T) (cudart.Streams, cudart.Stream) {
	t.Helper()
	st := need[cudart.Streams](t, s.rt)
	stream, err := st.StreamCreate(s.dev)
	require.NoError(t, err, "cudaStreamCreate")
	cleanup(t, "cudaStreamDestroy", func() error { return st.StreamDestroy(s.dev, stream) })
	return st, stream
}

// read copies n bytes of device memory at p to a new slice.
func (s *suite) read(t testing.TB, p cudart.DevicePtr, n uint64) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(b), cudart.DeviceMem(p, n), cudart.DeviceToHost), "cudaMemcpy")
	return b
}

// openBLAS opens cuBLAS for the suite's runtime, skipping where there is none.
func (s *suite) openBLAS(t *testing.T) *cublas.Library {
	t.Helper()
	l, err := cublas.Open(s.rt)
	if errors.Is(err, cublas.ErrLibraryNotFound) {
		t.Skipf("no cuBLAS: %v", err)
	}
	require.NoError(t, err, "cublas.Open")
	return l
}

// handle makes a handle on stream freed at cleanup.
func (s *suite) handle(t *testing.T, l *cublas.Library, stream cudart.Stream) *cublas.Handle {
	t.Helper()
	h, err := l.NewHandle(s.dev, stream)
	require.NoError(t, err, "NewHandle")
	t.Cleanup(func() { assert.NoError(t, h.Close(), "Handle.Close") })
	return h
}

// devMem is device memory from cudaMalloc as a cuBLAS workspace.
type devMem struct {
	p   cudart.DevicePtr
	n   uint64
	dev int
}

func (m devMem) Ptr() (cudart.DevicePtr, error) { return m.p, nil }
func (m devMem) Size() uint64                   { return m.n }
func (m devMem) Device() int                    { return m.dev }
