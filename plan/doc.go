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
// in the order, and the plan is decoded again. On real inference graphs
// this reaches the lower bound, and Plan stops there.
//
// When it does not, an exact search takes over from the best greedy
// layout: a depth-first branch and bound over canonical layouts, those in
// which every buffer sits at 0 or directly on a buffer it meets in time,
// built bottom up in a fixed order so that no layout is visited twice. It
// prunes with the bytes still to place at each step against the room left
// above the lowest offset they can take there, with the dominance of
// layouts that leave a gap some waiting buffer could fill, and by splitting
// the problem into independent parts wherever no waiting buffer crosses a
// step, both up front and as buffers are placed. It restarts with three
// orders of the buffers (by lifetime, by area, by the heaviest step they
// live in) and node limits that double each round, and runs those searches
// on all cores; which search's answer counts is fixed by the order of the
// rounds, never by which finished first.
//
// Without WithCapacity the exact search lowers the arena one step at a time
// toward the lower bound, within a default budget of nodes scaled to the
// input (some 10 ms on a graph of a few hundred buffers), or within
// WithTimeLimit. With WithCapacity it looks for a layout within the
// capacity until it finds one, proves that none exists, or
// DefaultCapacityTimeLimit (or WithTimeLimit, or WithContext) ends it; a
// layout that does not fit comes back with a *NoFitError.
//
// Inputs so large or so dense that a single decode would take milliseconds
// (a hundred thousand buffers, or thousands all alive together) are planned
// instead by two fast passes, run side by side, the better of which is
// kept: first fit by power-of-two size class, largest first, and within a
// class the buffers of the heaviest steps first, each group in step order,
// over an index of the placed buffers by blocks of steps; and one sweep over
// the steps, best fit among the gaps of a free list, in O(n log n).
//
// Steps are compared, never enumerated: a request alive "for the whole
// plan" may say First 0, Last math.MaxInt32 (or math.MaxInt) at no cost.
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
// The greedy search is bounded by a count of tries and its perturbations
// come from a generator with a fixed seed; the exact search's default budget
// is a count of nodes. The same requests and options therefore give the
// same offsets, on any machine and at any load, whenever the search ends
// before a time limit or context stops it.
//
// # Caveats
//
// The exact search runs on as many goroutines as GOMAXPROCS allows, up to
// three, and the two passes for large inputs on two; a time limit or context makes the result depend on the machine's
// speed when it fires, and only then. With WithPlaced the exact search is
// not used: the new requests are planned by the greedy search alone, and a
// capacity is checked against its layout. Finding a layout within a
// capacity is NP-hard: the search may need its whole time limit, and a
// layout at the lower bound may not exist.
//
// Offsets are multiples of 256 at least (align.CUDA); larger alignments are
// honoured. Placed buffers are trusted to form a valid plan among
// themselves; Validate checks any plan, and Plan checks every layout it
// found before returning it, which BenchmarkCheckCost measures at 5-14% of
// Plan's time on inputs of 100,000 buffers and more, some 15% when one
// buffer joins 10,000 placed ones, and up to a quarter, 2-30 µs, on the
// inference traces.
// Sizes, offsets and sums of sizes are checked against 64-bit overflow and
// refused with ErrOverflow rather than wrapped. A panic on a goroutine
// that Plan started, which would otherwise end the process, comes back as
// an error wrapping ErrInternal.
//
// ReadTrace reads the inference traces the project records (see Trace) and
// ReadCSV the problems of MiniMalloc's benchmarks; examples/plan plans
// either and draws the result.
package plan
