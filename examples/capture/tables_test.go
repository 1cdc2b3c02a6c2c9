package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

func TestByRows(t *testing.T) {
	rt, s := fakeStream(t)
	on := []Stream{{0, s}}
	var made []int
	g, err := EachBatch(rt, 0, []int{1, 8, 1}, func(rows int) (cudart.GraphExec, error) {
		made = append(made, rows)
		xs, _, err := Instantiate(rt, on, func() error { return nil })
		if err != nil {
			return 0, err
		}
		return xs[0], nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 8}, made, "once a size")
	x, err := g.For(8)
	require.NoError(t, err)
	assert.NotZero(t, x)
	_, err = g.For(2)
	require.ErrorIs(t, err, pool.ErrUnknownProfile)
	assert.ErrorContains(t, err, "no graph for 2 rows")
	x, err = ByRows(nil).For(2)
	require.NoError(t, err)
	assert.Zero(t, x, "no graphs: call by call")
	require.NoError(t, g.Destroy(rt, 0))

	_, err = EachBatch(rt, 0, []int{1, 8}, func(rows int) (cudart.GraphExec, error) {
		if rows == 8 {
			return 0, assert.AnError
		}
		xs, _, err := Instantiate(rt, on, func() error { return nil })
		return xs[0], err
	})
	require.ErrorIs(t, err, assert.AnError, "the graph of 1 row destroyed: NewFakeT's cleanup checks")
}

func TestEachSlotMakesAGraphOnEverySlot(t *testing.T) {
	rt, _ := fakeStream(t)
	var profiles []*pool.Profile
	for _, name := range []string{"a", "b"} {
		pr := pool.NewProfile(name)
		_, err := pr.Device(256, pool.Name("x"))
		require.NoError(t, err)
		profiles = append(profiles, pr)
	}
	s, err := pool.NewSlots(rt, 3, pool.SlotLayout{Profiles: profiles})
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	seen := map[[2]int]bool{}
	g, err := EachSlot(rt, 0, s, []string{"a", "b"}, func(sl pool.Slot, p int) (cudart.GraphExec, error) {
		seen[[2]int{sl.Index(), p}] = true
		st, err := sl.Stream()
		if err != nil {
			return 0, err
		}
		xs, _, err := Instantiate(rt, []Stream{{0, st}}, func() error { return nil })
		if err != nil {
			return 0, err
		}
		return xs[0], nil
	})
	require.NoError(t, err)
	assert.Len(t, seen, 6, "3 slots × 2 profiles")
	sl, err := s.Acquire(t.Context(), "b")
	require.NoError(t, err)
	assert.NotZero(t, g.Of(sl, 1))
	assert.Zero(t, PerSlot(nil).Of(sl, 1), "no graphs: call by call")
	require.NoError(t, s.Release(sl))
	require.NoError(t, g.Destroy(rt, 0))

	calls := 0
	_, err = EachSlot(rt, 0, s, []string{"a"}, func(sl pool.Slot, p int) (cudart.GraphExec, error) {
		if calls++; calls == 2 {
			return 0, assert.AnError
		}
		st, err := sl.Stream()
		if err != nil {
			return 0, err
		}
		xs, _, err := Instantiate(rt, []Stream{{0, st}}, func() error { return nil })
		return xs[0], err
	})
	require.ErrorIs(t, err, assert.AnError, "the first graph destroyed, every slot released")
	sl, err = s.Acquire(t.Context(), "a")
	require.NoError(t, err)
	require.NoError(t, s.Release(sl))
}
