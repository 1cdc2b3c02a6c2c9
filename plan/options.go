package plan

// Option adjusts one call to Plan.
type Option func(*config)

type config struct {
	placed []Placed
	// tries is the number of orders the search may decode after the greedy
	// ones; negative means scaled to the input.
	tries int
}

func defaults() config { return config{tries: -1} }

// WithPlaced gives buffers that already have offsets. The new requests are
// placed around them, they never move, and the result's arena and lower
// bound count them. Overlaps among the placed buffers themselves are not
// checked (Validate does that); each must be a valid request at an offset
// that is a multiple of its alignment.
func WithPlaced(placed []Placed) Option {
	return func(c *config) { c.placed = placed }
}

// WithTries bounds the search that follows the greedy orders to n decoded
// orders; zero keeps the best greedy plan. By default the bound scales with
// the input so that a graph of a few hundred buffers takes a few
// milliseconds at most, and the search stops earlier whenever a plan reaches
// the lower bound. The bound is a count, never a duration, so that a plan
// depends on its input alone.
func WithTries(n int) Option {
	return func(c *config) { c.tries = max(n, 0) }
}
