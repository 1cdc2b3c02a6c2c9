package bytekernels

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// On the fake, fill and copy touch n bytes, no more than they have
// threads, as the PTX does on a GPU.
func TestFillAndCopyOnTheFake(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	Register(rt)
	m, err := rt.ModuleLoadData(0, PTX)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.ModuleUnload(0, m)) }()
	fill, err := rt.ModuleGetFunction(0, m, Fill)
	require.NoError(t, err)
	cp, err := rt.ModuleGetFunction(0, m, Copy)
	require.NoError(t, err)
	src, err := rt.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.Free(0, src)) }()
	dst, err := rt.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.Free(0, dst)) }()
	require.NoError(t, rt.Memset(0, src, 0, 64))
	require.NoError(t, rt.Memset(0, dst, 0, 64))

	one := cudart.Dim1(1)
	require.NoError(t, rt.LaunchKernel(0, fill, one, cudart.Dim1(32), 0, 0, cudart.Arg(src), cudart.Arg[uint64](40), cudart.Arg[uint32](7)))
	require.NoError(t, rt.LaunchKernel(0, cp, one, cudart.Dim1(64), 0, 0, cudart.Arg(dst), cudart.Arg(src), cudart.Arg[uint64](24)))
	require.NoError(t, rt.DeviceSynchronize(0))
	got := make([]byte, 64)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(dst, 64), cudart.DeviceToHost))
	assert.Equal(t, sevens(24, 64), got, "copy: n bytes")
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(src, 64), cudart.DeviceToHost))
	assert.Equal(t, sevens(32, 64), got, "fill: n bytes, but 32 threads")
}

// sevens is size bytes, the first n of them 7 and the rest 0.
func sevens(n, size int) []byte {
	b := make([]byte, size)
	for i := range n {
		b[i] = 7
	}
	return b
}
