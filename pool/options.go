package pool

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/opt"
	"github.com/cudapool/cudapool/pinned"
)

// Option configures New. Options are values made by the With functions of
// this package; New applies them to its own copy of the configuration before
// it takes any lock or reserves anything, so no caller code runs inside the
// pool.
type Option interface{ opt.Option[config] }

// option is an Option that may refuse its value, set one that cannot.
type option = opt.Func[config]

var set = opt.Set[config]

type config struct {
	deviceBytes uint64
	hostBytes   uint64
	device      int
	logger      *zap.Logger

	hostMethod    pinned.Method
	hostFlags     pinned.Flags
	managedBytes  uint64
	heapBytes     uint64
	growableMax   uint64 // a growable device arena of at most this many bytes; 0 for a fixed one
	trimOnRelease bool
	peers         []int
	streams       []cudart.Stream
	guard         uint64 // bytes of guard after each buffer, a multiple of 256
}

// defaults are the C++ pool's sizes, a 4 GiB device arena and an 8 GiB host
// arena on device 0, with the host arena pinned the fast way.
func defaults() config {
	return config{
		deviceBytes: 4 << 30,
		hostBytes:   8 << 30,
		logger:      zap.NewNop(),
		hostMethod:  pinned.MethodRegister,
	}
}

// configure applies opts to the defaults, refusing a nil option by its
// position so the caller can find it.
func configure(opts []Option) (config, error) {
	cfg := defaults()
	if err := opt.Configure(&cfg, opts, ErrInvalidOption); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// WithDeviceBytes sets the device arena's size (default 4 GiB). Zero means no
// device arena is taken; WantDevice then fails with ErrNoArena.
func WithDeviceBytes(n uint64) Option { return set(func(c *config) { c.deviceBytes = n }) }

// WithHostBytes sets the pinned host arena's size (default 8 GiB). Zero means
// no host arena is taken; WantHost then fails with ErrNoArena.
func WithHostBytes(n uint64) Option { return set(func(c *config) { c.hostBytes = n }) }

// WithDevice selects the GPU by ordinal (default 0). Every CUDA call the pool
// makes selects this device first. A negative ordinal, or one the runtime
// does not have, makes New fail with ErrInvalidOption.
func WithDevice(ordinal int) Option {
	return option(func(c *config) error {
		if ordinal < 0 {
			return fmt.Errorf("%w: WithDevice(%d): a device ordinal is 0 or more", ErrInvalidOption, ordinal)
		}
		c.device = ordinal
		return nil
	})
}

// WithLogger sets the logger (default zap.NewNop()). The pool logs at Info on
// New and Close, at Warn on exhaustion, and at Debug on Commit, ReleaseAll
// and each request. It never logs while it holds its lock, so a logger that
// blocks or panics cannot wedge the pool. A nil logger makes New fail with
// ErrInvalidOption.
func WithLogger(l *zap.Logger) Option {
	return option(func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil): pass zap.NewNop() for no logs", ErrInvalidOption)
		}
		c.logger = l
		return nil
	})
}
