package plan_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// box is a rectangle of the step-by-byte plane: steps [t0, t1), units
// [y0, y1) of 256 bytes.
type box struct{ t0, t1, y0, y1 int }

// perfectPacking cuts a box of steps steps by width units into rectangles
// that tile it, and returns them as requests with the offsets of that
// tiling. Every step then has exactly width units alive, so the optimum is
// the lower bound, known by construction. With pinwheel set, the first cut
// is a pinwheel (four rectangles turning around a fifth), which no straight
// line splits; deeper cuts are straight or pinwheels at random.
func perfectPacking(r *rand.Rand, steps, width, pieces int, pinwheel bool) ([]plan.Request, []uint64) {
	boxes := []box{{0, steps, 0, width}}
	first := pinwheel
	for len(boxes) < pieces {
		k := r.IntN(len(boxes))
		b := boxes[k]
		var parts []box
		switch {
		case b.t1-b.t0 >= 3 && b.y1-b.y0 >= 3 && (first || r.IntN(4) == 0):
			parts = pinwheelCut(r, b)
		case b.t1-b.t0 >= 2 && (b.y1-b.y0 < 2 || r.IntN(2) == 0):
			t := b.t0 + 1 + r.IntN(b.t1-b.t0-1)
			parts = []box{{b.t0, t, b.y0, b.y1}, {t, b.t1, b.y0, b.y1}}
		case b.y1-b.y0 >= 2:
			y := b.y0 + 1 + r.IntN(b.y1-b.y0-1)
			parts = []box{{b.t0, b.t1, b.y0, y}, {b.t0, b.t1, y, b.y1}}
		}
		if parts == nil {
			if allUnit(boxes) {
				break
			}
			continue
		}
		first = false
		boxes = append(append(boxes[:k:k], boxes[k+1:]...), parts...)
	}
	reqs := make([]plan.Request, len(boxes))
	offs := make([]uint64, len(boxes))
	for i, b := range boxes {
		reqs[i] = plan.Request{Size: uint64(b.y1-b.y0) * 256, First: b.t0, Last: b.t1 - 1}
		offs[i] = uint64(b.y0) * 256
	}
	return reqs, offs
}

// pinwheelCut splits b into five rectangles: A low and early, D high and
// early, B low and late, C high and late, E in the middle.
func pinwheelCut(r *rand.Rand, b box) []box {
	t1 := b.t0 + 1 + r.IntN(b.t1-b.t0-2)
	t2 := t1 + 1 + r.IntN(b.t1-t1-1)
	w1 := b.y0 + 1 + r.IntN(b.y1-b.y0-2)
	w2 := w1 + 1 + r.IntN(b.y1-w1-1)
	return []box{
		{b.t0, t2, b.y0, w1}, // A
		{t2, b.t1, b.y0, w2}, // B
		{t1, b.t1, w2, b.y1}, // C
		{b.t0, t1, w1, b.y1}, // D
		{t1, t2, w1, w2},     // E
	}
}

func allUnit(boxes []box) bool {
	for _, b := range boxes {
		if b.t1-b.t0 > 1 || b.y1-b.y0 > 1 {
			return false
		}
	}
	return true
}

// straightCut reports whether a line across the whole layout, at a step
// boundary or at a byte offset, crosses no buffer.
func straightCut(reqs []plan.Request, offs []uint64, steps int, arena uint64) bool {
	for t := 1; t < steps; t++ {
		crossed := false
		for _, q := range reqs {
			crossed = crossed || (q.First < t && q.Last >= t)
		}
		if !crossed {
			return true
		}
	}
	for y := uint64(256); y < arena; y += 256 {
		crossed := false
		for i, q := range reqs {
			crossed = crossed || (offs[i] < y && offs[i]+q.Size > y)
		}
		if !crossed {
			return true
		}
	}
	return false
}

// TestPerfectPackings asks for layouts within the lower bound of inputs that
// tile it exactly, so a layout that fits exists; the search must find one,
// and find the same one again.
func TestPerfectPackings(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	trials := shortOr(40, 10)
	for trial := range trials {
		pinwheel := trial%2 == 0
		steps, width := 6+r.IntN(20), 8+r.IntN(40)
		capacity := uint64(width) * 256
		reqs, tiling := perfectPacking(r, steps, width, 8+r.IntN(30), pinwheel)
		// Later cuts may line up with the pinwheel's into a straight
		// line; such a tiling is drawn again.
		for pinwheel && straightCut(reqs, tiling, steps, capacity) {
			reqs, tiling = perfectPacking(r, steps, width, 8+r.IntN(30), pinwheel)
		}
		require.NoError(t, plan.Validate(reqs, tiling), "trial %d: the generator's own tiling", trial)
		res, err := plan.Plan(reqs, plan.WithCapacity(capacity), plan.WithTimeLimit(time.Minute))
		require.NoError(t, err, "trial %d", trial)
		checkPlan(t, reqs, nil, res)
		assert.Equal(t, capacity, res.LowerBound, "trial %d", trial)
		assert.Equal(t, capacity, res.ArenaBytes, "trial %d", trial)
		again, err := plan.Plan(reqs, plan.WithCapacity(capacity), plan.WithTimeLimit(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, res, again, "trial %d: not deterministic", trial)
	}
}
