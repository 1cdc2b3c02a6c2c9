package plan

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTreapMatchesSortedSlice runs random inserts, removals and ceiling
// queries against a sorted slice doing the same.
func TestTreapMatchesSortedSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tr := newTreap()
	var ref []gapKey
	cmpKey := func(a, b gapKey) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	}
	for range 20000 {
		k := gapKey{r.Uint64N(50), r.Uint64N(50)}
		pos, present := slices.BinarySearchFunc(ref, k, cmpKey)
		switch {
		case !present && r.IntN(2) == 0:
			tr.insert(k)
			ref = slices.Insert(ref, pos, k)
		case present && r.IntN(3) == 0:
			tr.remove(k)
			ref = slices.Delete(ref, pos, pos+1)
		}
		q := gapKey{r.Uint64N(55), r.Uint64N(55)}
		got, ok := tr.ceiling(q)
		at, _ := slices.BinarySearchFunc(ref, q, cmpKey)
		require.Equal(t, at < len(ref), ok, "ceiling(%v)", q)
		if ok {
			require.Equal(t, ref[at], got, "ceiling(%v)", q)
		}
	}
	assert.NotEmpty(t, ref, "the walk should leave keys behind")
}
