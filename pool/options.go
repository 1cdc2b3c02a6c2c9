package pool

import (
	"go.uber.org/zap"

	"github.com/cudapool/cudapool/pinned"
)

// Option configures New.
type Option func(*config)

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

// WithDeviceBytes sets the device arena's size (default 4 GiB). Zero means no
// device arena is taken; WantDevice then fails with ErrNoArena.
func WithDeviceBytes(n uint64) Option { return func(c *config) { c.deviceBytes = n } }

// WithHostBytes sets the pinned host arena's size (default 8 GiB). Zero means
// no host arena is taken; WantHost then fails with ErrNoArena.
func WithHostBytes(n uint64) Option { return func(c *config) { c.hostBytes = n } }

// WithDevice selects the GPU by ordinal (default 0). Every CUDA call the pool
// makes selects this device first.
func WithDevice(ordinal int) Option { return func(c *config) { c.device = ordinal } }

// WithLogger sets the logger (default zap.NewNop()). The pool logs at Info on
// New, Commit, ReleaseAll and Close, at Warn on exhaustion, and per request
// only at Debug.
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
