package pool_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/plan"
	"github.com/cudapool/cudapool/pool"
)

func TestLifetimesShareMemory(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(64*mib), pool.WithHostBytes(0))
	a, err := p.WantDevice(mib, pool.Name("a"), pool.Live(0, 1))
	require.NoError(t, err)
	b, err := p.WantDevice(mib, pool.Name("b"), pool.Live(2, 3))
	require.NoError(t, err)
	c, err := p.WantDevice(mib, pool.Name("c"), pool.Live(1, 2))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())

	assert.Equal(t, a.Offset(), b.Offset(), "a and b are never alive together")
	assert.NotEqual(t, a.Offset(), c.Offset())
	st := p.Stats().Device
	assert.Equal(t, uint64(2*mib), st.Used)
	assert.Equal(t, uint64(3*mib), st.Unshared)
	assert.Equal(t, uint64(mib), st.Saved)

	// Placed buffers never move; new ones go around them.
	offs := []uint64{a.Offset(), b.Offset(), c.Offset()}
	w, err := p.WantDevice(1000, pool.Name("whole"))
	require.NoError(t, err)
	e, err := p.WantDevice(mib, pool.Name("e"), pool.Live(0, 0))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, offs, []uint64{a.Offset(), b.Offset(), c.Offset()})
	assert.GreaterOrEqual(t, w.Offset(), uint64(2*mib), "a buffer without Live conflicts with every other")
	checkLayout(t, p)

	l := p.Layout()
	require.Len(t, l, 5)
	byName := map[string]pool.Placement{}
	for _, pl := range l {
		byName[pl.Name] = pl
	}
	assert.Equal(t, 2, byName["b"].First)
	assert.Equal(t, 3, byName["b"].Last)
	assert.True(t, byName["whole"].Whole)
	assert.False(t, byName["e"].Whole)
	_ = e
}

// TestTracePlannedThroughThePool places a real inference graph's activations
// through WantDevice with lifetimes: the arena must come within 1% of the
// lower bound, against about ten times without sharing.
func TestTracePlannedThroughThePool(t *testing.T) {
	f, err := openPlanTrace("resnet101.json")
	require.NoError(t, err)
	defer f.Close()
	tr, err := plan.ReadTrace(f)
	require.NoError(t, err)

	p, _ := newPool(t, pool.WithDeviceBytes(4*gib), pool.WithHostBytes(0))
	for _, tn := range tr.Tensors {
		_, err := p.WantDevice(tn.Size, pool.Live(tn.First, tn.Last))
		require.NoError(t, err)
	}
	require.NoError(t, p.Commit())
	lb, err := plan.LowerBound(tr.Tensors)
	require.NoError(t, err)
	st := p.Stats().Device
	assert.LessOrEqual(t, float64(st.Used), 1.01*float64(lb))
	assert.Greater(t, st.Saved, 4*st.Used, "sharing saves most of the no-sharing footprint")
	checkLayout(t, p)
	t.Logf("resnet101 through the pool: used %d, lower bound %d, no sharing %d", st.Used, lb, st.Unshared)
}

// openPlanTrace opens a trace of plan's testdata: beside the sources, or
// beside the test binary, where make gpu copies them (testdata/plan/traces),
// for a binary that runs on a host without the sources.
func openPlanTrace(name string) (*os.File, error) {
	f, err := os.Open(filepath.Join("..", "plan", "testdata", "traces", name))
	if err == nil {
		return f, nil
	}
	exe, exeErr := os.Executable()
	if exeErr != nil {
		return nil, errors.Join(err, exeErr)
	}
	f, besideErr := os.Open(filepath.Join(filepath.Dir(exe), "testdata", "plan", "traces", name))
	if besideErr != nil {
		return nil, errors.Join(err, besideErr)
	}
	return f, nil
}

// TestStatsSumsPast2To64 places buffers of 2^61-1 bytes, each alive at its
// own step, in an arena of 2^62: they share 2^61 bytes, and their sizes
// add up past 2^64 from the eighth on, which Stats could not report.
// Satisfy refuses the buffer that would take them there, places nothing of
// its batch, and Stats stays exact.
func TestStatsSumsPast2To64(t *testing.T) {
	const size = 1<<61 - 1
	f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(1<<62))
	p, err := pool.New(f, pool.WithDeviceBytes(1<<62), pool.WithHostBytes(0))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })

	for i := range 9 {
		_, err := p.WantDevice(size, pool.Live(i, i))
		require.NoError(t, err)
	}
	st := p.Stats().Device
	assert.Equal(t, uint64(math.MaxUint64), st.Pending, "9 * 2^61 bytes queued: saturated")
	err = p.Satisfy()
	require.ErrorIs(t, err, pool.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "device arena: the sizes of the placed and queued buffers add up past 2^64 B")
	st = p.Stats().Device
	assert.Zero(t, st.Placed, "nothing of the batch is placed")
	assert.Equal(t, 9, st.Queued, "the queue is kept")

	require.NoError(t, p.ReleaseAll())
	for i := range 7 {
		_, err := p.WantDevice(size, pool.Live(i, i))
		require.NoError(t, err)
		require.NoError(t, p.Satisfy())
	}
	_, err = p.WantDevice(size, pool.Live(7, 7))
	require.NoError(t, err)
	require.ErrorIs(t, p.Satisfy(), pool.ErrInvalidRequest, "8 * 2^61 bytes unshared is 2^64")
	st = p.Stats().Device
	assert.Equal(t, 7, st.Placed)
	assert.Equal(t, uint64(7*size), st.Requested)
	assert.Equal(t, uint64(7<<61), st.Unshared)
	assert.Equal(t, uint64(7), st.Padding)
	assert.Equal(t, uint64(1<<61), st.Used)
	assert.Equal(t, uint64(6<<61), st.Saved)
}
