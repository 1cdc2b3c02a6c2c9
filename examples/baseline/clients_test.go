package baseline

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// Each client gets its own stream and memory, activations only where
// asked; Close gives all of it back (NewFakeT's cleanup checks), calling
// onStream for each client while its stream lives.
func TestClientsTakeTheirOwnMemory(t *testing.T) {
	for _, act := range []uint64{0, 512} {
		rt := cudarttest.NewFakeT(t)
		cs, err := NewClients(rt, 0, 3, Sizes{In: 100, Out: 200, Act: act})
		require.NoError(t, err)
		require.Len(t, cs.All, 3)
		streams := map[cudart.Stream]bool{}
		for _, c := range cs.All {
			streams[c.Stream] = true
			assert.Len(t, c.In, 100)
			assert.Len(t, c.Out, 200)
			assert.Equal(t, act != 0, c.X != 0 && c.Y != 0 && c.X != c.Y, "activations with Act %d", act)
		}
		assert.Len(t, streams, 3, "a stream a client")
		var closed []int
		require.NoError(t, cs.Close(func(i int) error {
			require.NoError(t, rt.StreamSynchronize(0, cs.All[i].Stream), "the stream still lives")
			closed = append(closed, i)
			return nil
		}))
		assert.Equal(t, []int{0, 1, 2}, closed)
	}
}

// A failure leaves nothing made.
func TestNewClientsFailsCleanly(t *testing.T) {
	for _, call := range []string{"cudaStreamCreate", "cudaMallocHost", "cudaMalloc"} {
		t.Run(call, func(t *testing.T) {
			rt := cudarttest.NewFakeT(t)
			require.NoError(t, rt.FailCallNth(call, 2, cudart.ErrMemoryAllocation.Code))
			_, err := NewClients(rt, 0, 2, Sizes{In: 8, Out: 8, Act: 8})
			assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
		})
	}
}

// Serve hands run the client asked for and its graph of rows, and
// refuses a size the client has no graph for.
func TestClientsServe(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	cs, err := NewClients(rt, 0, 2, Sizes{In: 8, Out: 8})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cs.Close(nil)) }()
	waited, err := cs.Serve(1, 4, func(c *Client, g cudart.GraphExec) error {
		assert.Same(t, &cs.All[1], c)
		assert.Zero(t, g)
		return errors.ErrUnsupported
	})
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Zero(t, waited)
	cs.All[0].Graphs = map[int]cudart.GraphExec{}
	_, err = cs.Serve(0, 4, func(*Client, cudart.GraphExec) error { t.Error("ran"); return nil })
	assert.ErrorIs(t, err, pool.ErrUnknownProfile)
}

// KeepFreed raises the release threshold to its maximum, and restore puts
// it back.
func TestKeepFreed(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	require.NoError(t, rt.SetMemPoolReleaseThreshold(0, 1<<20))
	restore, err := KeepFreed(rt, 0)
	require.NoError(t, err)
	got, err := rt.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), got)
	require.NoError(t, restore())
	got, err = rt.MemPoolReleaseThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<20), got)
}
