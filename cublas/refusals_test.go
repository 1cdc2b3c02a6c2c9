package cublas_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// A stream of another device is refused at NewHandle and SetStream, naming
// both devices, before cuBLAS sees it; nothing is left behind.
func TestAnotherDevicesStreamIsRefused(t *testing.T) {
	rt := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	s1, err := rt.StreamCreate(1)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.StreamDestroy(1, s1)) })
	_, err = blas.NewHandle(0, s1)
	require.ErrorIs(t, err, cublas.ErrInvalidStream)
	assert.Contains(t, err.Error(), "device 1's, the handle device 0's")
	assert.Zero(t, rt.Live().LibraryHandles, "refused before cublasCreate")

	h, err := blas.NewHandle(0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	err = h.SetStream(s1)
	require.ErrorIs(t, err, cublas.ErrInvalidStream)
	st, err := h.Stream()
	require.NoError(t, err)
	assert.Equal(t, cudart.Stream(0), st)

	require.NoError(t, rt.StreamDestroy(1, s1))
	err = h.SetStream(s1)
	require.ErrorIs(t, err, cublas.ErrInvalidStream, "a destroyed stream")
	s1, err = rt.StreamCreate(1)
	require.NoError(t, err)
}

// zeroWorkspace is device memory at address 0.
type zeroWorkspace struct{}

func (zeroWorkspace) Ptr() (cudart.DevicePtr, error) { return 0, nil }
func (zeroWorkspace) Size() uint64                   { return 32 << 20 }
func (zeroWorkspace) Device() int                    { return 0 }

// cuBLAS takes a workspace at address 0 and its next GEMM faults the device:
// the binding refuses it.
func TestAWorkspaceAtZeroIsRefused(t *testing.T) {
	_, _, h, ws, _ := setup(t)
	require.ErrorIs(t, h.SetWorkspace(zeroWorkspace{}), cublas.ErrInvalidWorkspace)
	got, err := h.Workspace()
	require.NoError(t, err)
	assert.Same(t, ws, got, "the workspace before stays")
}

// A SetStream that fails half way, or on a workspace since released,
// changes nothing: the handle keeps its stream and workspace, in cuBLAS and
// in the binding.
func TestAFailedSetStreamChangesNothing(t *testing.T) {
	rt, p, h, ws, mats := setup(t)
	fake, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		t.Skip("injects faults into the fake")
	}
	before, err := h.Stream()
	require.NoError(t, err)
	other, err := rt.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.StreamDestroy(0, other)) })
	pm, err := mats.Ptr()
	require.NoError(t, err)
	g := cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(pm, 4), B: f32(pm, 4), C: f32(pm+256, 4)}

	require.NoError(t, fake.FailCallNth("cublasSetWorkspace_v2", 1, 14))
	require.Error(t, h.SetStream(other), "cublasSetStream succeeds, setting the workspace again fails")
	st, err := h.Stream()
	require.NoError(t, err)
	assert.Equal(t, before, st)
	got, err := h.Workspace()
	require.NoError(t, err)
	assert.Same(t, ws, got)
	// The GEMM runs on the stream before, in the workspace before: other
	// has nothing queued.
	require.NoError(t, h.Gemm(g))
	idle, err := rt.StreamQuery(0, other)
	require.NoError(t, err)
	assert.True(t, idle, "cuBLAS was set back to the stream before")
	require.NoError(t, rt.StreamSynchronize(0, before))

	require.NoError(t, p.ReleaseAll())
	require.ErrorIs(t, h.SetStream(other), cublas.ErrInvalidWorkspace, "the workspace was released")
	st, err = h.Stream()
	require.NoError(t, err)
	assert.Equal(t, before, st)
}

// A host buffer of a mapped host arena has a device address (its Ptr is
// the alias), and so has a managed buffer; neither is device memory, and
// SetWorkspace refuses both, on the Handle and on a lease, naming the
// memory type, before cuBLAS sees them. The workspace before stays.
func TestAWorkspaceInHostOrManagedMemoryIsRefused(t *testing.T) {
	rt, _, h, ws, _ := setup(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(0), pool.WithHostBytes(64<<20), pool.WithHostFlags(pinned.Mapped), pool.WithManagedBytes(64<<20))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	host, err := p.WantHost(32<<20, pool.Name("host workspace"))
	require.NoError(t, err)
	managed, err := p.WantManaged(32<<20, pool.Name("managed workspace"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	alias, err := host.Ptr()
	require.NoError(t, err)
	require.NotZero(t, alias, "a mapped host buffer has a device address")

	var gen generation
	lent := h.Lend(&gen, 0)
	for _, c := range []struct {
		ws   *pool.Buffer
		want string
	}{{host, "cudaMemoryTypeHost"}, {managed, "cudaMemoryTypeManaged"}} {
		for who, set := range map[string]func(cublas.Workspace) error{"Handle": h.SetWorkspace, "Lent": lent.SetWorkspace} {
			err := set(c.ws)
			require.ErrorIs(t, err, cublas.ErrInvalidWorkspace, "%s: %s", who, c.want)
			assert.Contains(t, err.Error(), c.want, who)
			got, err := h.Workspace()
			require.NoError(t, err)
			assert.Same(t, ws, got, "%s: the workspace before stays", who)
		}
	}
}

// NewHandle on a device the runtime does not have fails with the device's
// error, not as a refused stream.
func TestANewHandleOnAMissingDeviceSaysSo(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	for _, dev := range []int{1, -1} {
		_, err = blas.NewHandle(dev, 0)
		require.ErrorIs(t, err, cudart.ErrInvalidDevice, "device %d", dev)
		assert.NotErrorIs(t, err, cublas.ErrInvalidStream, "device %d", dev)
		assert.Contains(t, err.Error(), fmt.Sprintf("cublas: a handle on device %d: ", dev))
	}
	assert.Zero(t, rt.Live().LibraryHandles)
}

// A GEMM on a handle whose stream was destroyed under it says so, matching
// ErrInvalidStream, rather than only cuBLAS's EXECUTION_FAILED.
func TestAGemmOnADestroyedStreamSaysSo(t *testing.T) {
	rt, _, h, _, mats := setup(t)
	if _, ok := cudart.As[*cudarttest.Fake](rt); !ok {
		t.Skip("on CUDA a stream destroyed under a handle is undefined behaviour")
	}
	s, err := rt.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, h.SetStream(s))
	require.NoError(t, rt.StreamDestroy(0, s))
	pm, err := mats.Ptr()
	require.NoError(t, err)
	err = h.Gemm(cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(pm, 4), B: f32(pm, 4), C: f32(pm+256, 4)})
	require.ErrorIs(t, err, cublas.ErrInvalidStream)
	require.ErrorIs(t, err, cublas.ErrExecutionFailed, "cuBLAS's status stays matched")
	assert.Contains(t, err.Error(), fmt.Sprintf("the handle's stream 0x%x is no live stream of the device", uintptr(s)))
}
