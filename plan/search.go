package plan

import (
	"math/rand/v2"
	"slices"
)

// searcher looks for a placement order whose plan needs no more than the
// lower bound. It starts from the classic greedy orders and then applies
// squeaky-wheel optimization: decode the current order, find the first item
// that ends above the goal, move it to a random earlier position, repeat. An
// item that cannot fit under the goal is one that was placed after the
// items that boxed it in; moving it ahead lets it take a good place first.
// The search is bounded by a count of tries, never by time, so the same
// input always gives the same plan.
type searcher struct {
	d *decoder
	// goal is the arena below which no plan can go: the lower bound, or the
	// placed buffers' top when that is higher.
	goal  uint64
	tries int
	rng   *rand.Rand

	best    []uint64
	bestTop uint64
	found   bool
}

// seed fixes the search's perturbations; any constant keeps plans
// deterministic.
const seed = 0x5eed_cafe

func newSearcher(d *decoder, goal uint64, tries int) *searcher {
	return &searcher{d: d, goal: goal, tries: tries, rng: rand.New(rand.NewPCG(seed, uint64(len(d.items))))}
}

// run decodes the starting orders, then searches from the best of them. It
// returns the offsets of the best plan found and its top, or false when
// every order overflowed 64 bits.
func (s *searcher) run(starts []func([]item) []int32) ([]uint64, uint64, bool) {
	var cur []int32
	for _, start := range starts {
		// Orders are built one at a time: the first often reaches the goal.
		order := start(s.d.items)
		if s.try(order) {
			cur = order
		}
		if s.done() {
			return s.best, s.bestTop, true
		}
	}
	if !s.found {
		return nil, 0, false
	}
	cur = slices.Clone(cur)
	for range s.tries {
		out := s.d.decode(cur, s.goal, s.bound())
		s.keep(out)
		if s.done() {
			break
		}
		s.promote(cur, out.over)
	}
	return s.best, s.bestTop, true
}

// greedyOrders are the starting points: the orders of the best known greedy
// planners, one of which is often already optimal on real graphs.
var greedyOrders = []func([]item) []int32{bySize, byBreadth, byLength, byArea, byStart}

func (s *searcher) try(order []int32) bool {
	return s.keep(s.d.decode(order, s.goal, s.bound()))
}

// keep records the decoder's plan when it is complete and the best so far.
func (s *searcher) keep(out outcome) bool {
	if !out.complete || out.overflow || (s.found && out.top >= s.bestTop) {
		return false
	}
	s.best = append(s.best[:0], s.d.off...)
	s.bestTop, s.found = out.top, true
	return true
}

// bound is the top a decode must stay under to be worth finishing.
func (s *searcher) bound() uint64 {
	if !s.found {
		return ^uint64(0)
	}
	return s.bestTop
}

func (s *searcher) done() bool { return s.found && s.bestTop <= s.goal }

// promote moves the item at position p of the order to a random earlier
// position; when no item is to blame (the first one already ends above the
// goal, or the plan overflowed) it moves a random one, so the search still
// moves.
func (s *searcher) promote(order []int32, p int) {
	if p <= 0 {
		if len(order) < 2 {
			return
		}
		p = 1 + s.rng.IntN(len(order)-1)
	}
	q := s.rng.IntN(p)
	it := order[p]
	copy(order[q+1:p+1], order[q:p])
	order[q] = it
}
