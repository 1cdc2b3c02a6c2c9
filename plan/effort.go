package plan

import "math"

// decodeCost estimates the time of one decode in units of about 5 ns: a
// visit per item and per range of placed buffers it must avoid, and per
// conflicting pair a visit plus its share of sorting the ranges of an
// item's placed neighbours, which grows with the log of their number.
func decodeCost(items int, pairs, busy int64) int64 {
	degree := 2 * float64(pairs) / float64(max(items, 1))
	return int64(items) + busy + int64(float64(pairs)*(1+math.Log2(1+degree)))
}

// Above sweepCost, Plan sweeps once in step order instead of searching: the
// greedy orders alone would take some 50 ms, and the conflict list a lot of
// memory.
const sweepCost = 2 << 20

// tryCost is what the search may spend by default: a search that never
// reaches the lower bound stops after some 10 ms.
const tryCost = 2 << 20

// maxTries caps the default number of tries; past it the search finds
// little that it has not found already.
const maxTries = 4096

// defaultTries scales the search to the input: hundreds of tries for the
// graphs of a few hundred buffers that real models have, fewer as the
// conflict graph grows, none past tryCost. A handful of items has only so
// many orders worth trying, so the count is also capped by the square of
// the number of items; that keeps the pool's frequent small calls cheap
// when the lower bound is out of reach.
func defaultTries(cost int64, items int) int {
	return int(min(tryCost/cost, maxTries, 4*int64(items)*int64(items)))
}
