// Package plan assigns arena offsets to buffers whose lifetimes are known,
// so that buffers never alive at the same time share memory. It is a pure
// function of its input: no CUDA, no pool, no clock.
//
// A Request is a size, an alignment and an inclusive range of steps (ops of
// an inference graph, stages of a pipeline). Plan returns an offset for each
// such that two requests whose step ranges intersect never overlap in bytes,
// and the arena size that the offsets need. LowerBound is the most bytes
// alive at any one step, which no plan can beat; on real inference graphs
// Plan almost always meets it exactly, where giving every buffer its own
// bytes needs about ten times as much.
//
// # How it plans
//
// A placement order is turned into offsets by best fit: each buffer in turn
// takes the smallest gap that holds it among the buffers already placed and
// alive with it. Plan decodes the orders of the best known greedy planners
// (by size and by breadth, as TensorFlow Lite's, by lifetime, by area, by
// first step) and then searches from the best of them by squeaky-wheel
// optimization: the first buffer that ends above the lower bound moves ahead
// in the order, and the plan is decoded again. It stops at the lower bound
// or after a number of tries scaled to the input. Inputs so large or so
// dense that a single decode would take milliseconds (a hundred thousand
// buffers, or thousands all alive together) are planned instead in one
// sweep over the steps, best fit among the gaps of a free list, in
// O(n log n).
//
// Steps are compared, never enumerated: a request alive "for the whole
// plan" may say First 0, Last math.MaxInt32 at no cost.
//
// # Incremental planning
//
// WithPlaced gives buffers that already have offsets; new requests are
// placed around them and they never move. Placed buffers alive across all
// the new requests' steps are merged once, so adding a request to thousands
// of whole-plan buffers costs a pass over them, not a search.
//
// # Determinism
//
// The search is bounded by a count of tries, and its perturbations come from
// a generator with a fixed seed: the same requests always give the same
// offsets, on any machine and at any load.
//
// # Caveats
//
// Offsets are multiples of 256 at least (align.CUDA); larger alignments are
// honoured. Placed buffers are trusted to form a valid plan among
// themselves; Validate checks any plan. Sizes, offsets and sums of sizes
// are checked against 64-bit overflow and refused with ErrOverflow rather
// than wrapped.
//
// ReadTrace reads the inference traces the project records (see Trace), and
// examples/plan plans one and draws the result.
package plan
