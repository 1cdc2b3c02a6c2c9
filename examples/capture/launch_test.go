package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
)

// Run launches the graph, or with none the calls one by one, and returns
// once the work has run; an error of either comes back.
func TestRunLaunchesTheGraphOrTheCalls(t *testing.T) {
	rt, s := fakeStream(t)
	p, err := rt.Malloc(0, 64)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.Free(0, p)) }()
	on := []Stream{{0, s}}
	xs, _, err := Instantiate(rt, on, memset(rt, p, 7, 64, s))
	require.NoError(t, err)
	defer func() { assert.NoError(t, Destroy(rt, on, xs)) }()
	byte63 := func() byte {
		got := make([]byte, 64)
		require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, 64), cudart.DeviceToHost))
		return got[63]
	}

	calls := 0
	require.NoError(t, Run(rt, 0, s, xs[0], func() error { calls++; return nil }))
	assert.Equal(t, byte(7), byte63(), "the graph ran")
	assert.Zero(t, calls, "no call made where there is a graph")

	require.NoError(t, Run(rt, 0, s, 0, memset(rt, p, 9, 64, s)))
	assert.Equal(t, byte(9), byte63(), "the calls ran")

	require.ErrorIs(t, Run(rt, 0, s, 0, func() error { return assert.AnError }), assert.AnError)
	require.NoError(t, rt.FailCall("cudaGraphLaunch", cudart.ErrInvalidValue.Code))
	require.ErrorIs(t, Run(rt, 0, s, xs[0], nil), cudart.ErrInvalidValue)
}
