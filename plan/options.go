package plan

import (
	"context"
	"fmt"
	"time"

	"github.com/cudapool/cudapool/internal/opt"
)

// Option adjusts one call to Plan. Options are values made by the With
// functions of this package; a nil Option is refused with an error wrapping
// ErrInvalidOption.
type Option interface{ opt.Option[config] }

// option is an Option that may refuse its value, set one that cannot.
type option = opt.Func[config]

var set = opt.Set[config]

type config struct {
	placed []Placed
	// tries is the number of orders the search may decode after the greedy
	// ones; negative means scaled to the input.
	tries int
	// capacity is the arena the layout must fit in; zero means none.
	capacity uint64
	hasCap   bool
	// limit bounds the exact search in time; zero means the default.
	limit time.Duration
	ctx   context.Context
}

func defaults() config { return config{tries: -1} }

// configure applies the options in order and returns the first refusal.
func configure(opts []Option) (config, error) {
	cfg := defaults()
	err := opt.Configure(&cfg, opts, ErrInvalidOption)
	return cfg, err
}

// WithPlaced gives buffers that already have offsets. The new requests are
// placed around them, they never move, and the result's arena and lower
// bound count them. Overlaps among the placed buffers themselves are not
// checked (Validate does that); each must be a valid request at an offset
// that is a multiple of its alignment.
func WithPlaced(placed []Placed) Option {
	return set(func(c *config) { c.placed = placed })
}

// WithTries bounds the search that follows the greedy orders to n decoded
// orders; zero keeps the best greedy plan. By default the bound scales with
// the input so that a graph of a few hundred buffers takes a few
// milliseconds at most, and the search stops earlier whenever a plan reaches
// the lower bound. The bound is a count, never a duration, so that a plan
// depends on its input alone.
func WithTries(n int) Option {
	return set(func(c *config) { c.tries = max(n, 0) })
}

// WithCapacity asks for a layout whose arena is at most bytes. Plan then
// searches until it finds one, proves that none exists, or its time limit
// ends (DefaultCapacityTimeLimit unless WithTimeLimit says otherwise). When
// no layout within the capacity is found, Plan returns the best layout it
// found together with a *NoFitError, which wraps ErrNoFit and says whether
// the search proved that none fits or ran out of time. A capacity of zero
// is refused with ErrInvalidOption.
func WithCapacity(bytes uint64) Option {
	return option(func(c *config) error {
		if bytes == 0 {
			return fmt.Errorf("%w: WithCapacity(0): a capacity is 1 B or more", ErrInvalidOption)
		}
		c.capacity, c.hasCap = bytes, true
		return nil
	})
}

// DefaultCapacityTimeLimit bounds a search for a layout within a capacity
// when no WithTimeLimit is given.
const DefaultCapacityTimeLimit = 10 * time.Second

// WithTimeLimit bounds the exact search in time. With WithCapacity it
// replaces DefaultCapacityTimeLimit; without, Plan spends up to d lowering
// the arena toward the lower bound instead of its default node budget. The
// limit only ever cuts the search short: a search that ends before it (it
// found a layout, reached the lower bound or proved the arena optimal)
// gives the same layout as it would with no limit. A limit that is not
// positive is refused with ErrInvalidOption.
func WithTimeLimit(d time.Duration) Option {
	return option(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithTimeLimit(%v): a time limit is positive", ErrInvalidOption, d)
		}
		c.limit = d
		return nil
	})
}

// WithContext stops the exact search when ctx is done, as WithTimeLimit
// does at its limit; Plan then returns the best layout found so far. It
// does not lift the default budgets. A nil ctx is refused with
// ErrInvalidOption.
func WithContext(ctx context.Context) Option {
	return option(func(c *config) error {
		if ctx == nil {
			return fmt.Errorf("%w: WithContext(nil): pass context.Background() for none", ErrInvalidOption)
		}
		c.ctx = ctx
		return nil
	})
}
