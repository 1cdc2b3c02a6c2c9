package pinned

import (
	"runtime"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/internal/opt"
)

// Option configures Alloc. Options are values made by the With functions of
// this package; Alloc applies them before it pins anything, and refuses a nil
// one with an error wrapping ErrInvalidOption.
type Option interface{ opt.Option[config] }

// set makes the package's options, none of which can fail.
var set = opt.Set[config]

type config struct {
	method   Method
	flags    Flags
	workers  int
	fallback bool
	logger   *zap.Logger
}

func defaults() config {
	return config{
		method:   MethodRegister,
		workers:  runtime.GOMAXPROCS(0),
		fallback: true,
		logger:   zap.NewNop(),
	}
}

// WithMethod selects how the memory is pinned (default MethodRegister).
func WithMethod(m Method) Option { return set(func(c *config) { c.method = m }) }

// WithFlags sets the flags (default none). WriteCombined makes a registering
// method fall back to MethodHostAlloc, the only one that offers it.
func WithFlags(f Flags) Option { return set(func(c *config) { c.flags = f }) }

// WithWorkers sets how many goroutines touch the pages of a registered region
// before it is pinned (default GOMAXPROCS). Values below 1 keep the default.
func WithWorkers(n int) Option {
	return set(func(c *config) {
		if n >= 1 {
			c.workers = n
		}
	})
}

// WithFallback says whether a registering method that cannot pin (a runtime
// or platform without registration, WriteCombined, cudaHostRegister refused)
// falls back to MethodHostAlloc (default true). Region.Method reports the method
// that was used. With false, Alloc returns the registration's error instead.
func WithFallback(on bool) Option { return set(func(c *config) { c.fallback = on }) }

// WithLogger sets the logger (default zap.NewNop()). Alloc logs a fallback at
// Warn when registration failed and at Info when the flags asked for it, and
// how long pinning took at Debug.
func WithLogger(l *zap.Logger) Option {
	return set(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}
