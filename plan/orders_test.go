package plan

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMinTreeMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 200 {
		v := make([]int32, 1+r.IntN(100))
		for i := range v {
			v[i] = r.Int32N(1000)
		}
		tree := newMinTree(v)
		for range 50 {
			lo := r.IntN(len(v))
			hi := lo + 1 + r.IntN(len(v)-lo)
			require.Equal(t, slices.Min(v[lo:hi]), tree.min(lo, hi), "v[%d:%d] of %v", lo, hi, v)
		}
	}
}

// TestByBreadth checks the order of TensorFlow Lite's greedy by breadth on
// a small graph: the items of the heaviest step first, largest first, then
// those of the next heaviest step not yet placed.
func TestByBreadth(t *testing.T) {
	items := []item{
		{span: span{first: 0, last: 1, size: 256}},
		{span: span{first: 1, last: 2, size: 1024}},
		{span: span{first: 2, last: 3, size: 512}},
		{span: span{first: 3, last: 3, size: 2048}},
		{span: span{first: 1, last: 1, size: 256}},
	}
	// Alive: step 0: 256; step 1: 1536; step 2: 1536; step 3: 2560. Step 3
	// places 3 and 2; step 1, first of the tied steps, places 1, then 0 and
	// 4, equal in size, by index.
	require.Equal(t, []int32{3, 2, 1, 0, 4}, byBreadth(items))
}
