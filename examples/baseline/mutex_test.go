package baseline

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

var wants = []Want{{Name: "in", Size: 1000, Host: true}, {Name: "x", Size: 4096}, {Name: "w", Size: 300}}

// NewMutex places every want, host or device as asked, and gives each
// one's memory by name.
func TestNewMutexPlacesTheWants(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	b, err := NewMutex(rt, 0, wants)
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	for _, w := range wants {
		require.Contains(t, b.Buffers, w.Name)
		assert.Equal(t, w.Size, b.Buffers[w.Name].Size(), w.Name)
		if w.Host {
			assert.Len(t, b.Host[w.Name], int(w.Size), w.Name)
			assert.NotContains(t, b.Device, w.Name)
		} else {
			assert.NotZero(t, b.Device[w.Name], w.Name)
			assert.NotContains(t, b.Host, w.Name)
		}
	}
	st := b.Pool.Stats()
	assert.GreaterOrEqual(t, st.Device.Used, uint64(4096+300), "the device wants")
	assert.GreaterOrEqual(t, st.Host.Used, uint64(1000), "the host want")
}

// A failure anywhere leaves nothing: NewFakeT's cleanup finds no stream,
// no allocation.
func TestNewMutexFailsCleanly(t *testing.T) {
	for _, call := range []string{"cudaStreamCreate", "cudaMalloc", "cudaHostAlloc"} {
		t.Run(call, func(t *testing.T) {
			rt := cudarttest.NewFakeT(t)
			require.NoError(t, rt.FailCall(call, cudart.ErrMemoryAllocation.Code))
			_, err := NewMutex(rt, 0, wants)
			assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
		})
	}
	rt := cudarttest.NewFakeT(t)
	_, err := NewMutex(rt, 0, []Want{{Name: "a", Size: 8}, {Name: "a", Size: 8}})
	assert.EqualError(t, err, `baseline: two wants called "a": a buffer is found by its name`)
}

// Serve runs one request at a time, with the graph of its rows; a size
// with no graph is refused before the wait.
func TestServeRunsOneAtATime(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	b, err := NewMutex(rt, 0, wants)
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := b.Serve(4, func(g cudart.GraphExec) error {
				most.Store(max(most.Load(), in.Add(1)))
				defer in.Add(-1)
				assert.Zero(t, g, "no graphs: call by call")
				return nil
			})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), most.Load())

	_, err = b.Serve(4, func(cudart.GraphExec) error { return errors.ErrUnsupported })
	assert.ErrorIs(t, err, errors.ErrUnsupported, "run's error")
	b.Graphs = map[int]cudart.GraphExec{}
	_, err = b.Serve(4, func(cudart.GraphExec) error { t.Error("ran"); return nil })
	assert.ErrorIs(t, err, pool.ErrUnknownProfile)
}

// Close calls what works in the pool before it closes the pool.
func TestCloseClosesInPoolFirst(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	b, err := NewMutex(rt, 0, wants)
	require.NoError(t, err)
	var poolOpen bool
	require.ErrorIs(t, b.Close(func() error {
		_, err := b.Buffers["x"].Ptr()
		poolOpen = err == nil
		return errors.ErrUnsupported
	}), errors.ErrUnsupported)
	assert.True(t, poolOpen)
}
