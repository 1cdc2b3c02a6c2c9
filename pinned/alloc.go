package pinned

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/opt"
)

// maxInt is the largest length a slice can have.
const maxInt = int(^uint(0) >> 1)

// errLeftPinned marks a failed Alloc whose cleanup failed too, leaving
// memory pinned: falling back would hide that, so Alloc returns it instead.
var errLeftPinned = errors.New("pinned: cleanup failed; memory is left pinned")

// Alloc returns size bytes of pinned host memory for device, pinned by the
// method WithMethod names (default MethodRegister). A registering method
// falls back to MethodHostAlloc where registration is impossible or refused,
// unless WithFallback(false); Region.Method says which one was used. An error
// leaves nothing pinned or mapped, unless its cleanup failed too, which the
// error then says.
func Alloc(rt cudart.Runtime, device int, size uint64, opts ...Option) (*Region, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: nil runtime; pass cudart.Open's Library or a cudarttest fake", ErrInvalidOption)
	}
	c := defaults()
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		return nil, err
	}
	if err := c.method.validate(); err != nil {
		return nil, err
	}
	if err := c.flags.validate(); err != nil {
		return nil, err
	}
	if size == 0 || size > uint64(maxInt) {
		return nil, fmt.Errorf("%w: asked for %d B; want 1 B to %d B", ErrInvalidSize, size, uint64(maxInt))
	}
	start := time.Now()
	r, err := alloc(rt, device, size, c)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A logger that panics must not leak the pinned memory.
		if p := recover(); p != nil {
			_ = r.Free()
			panic(p)
		}
	}()
	if ce := c.logger.Check(zap.DebugLevel, "pinned: allocated"); ce != nil {
		ce.Write(zap.Stringer("method", r.method), zap.Stringer("flags", r.flags),
			zap.String("size", bytesize.Format(size)), zap.Duration("took", time.Since(start)))
	}
	return r, nil
}

func alloc(rt cudart.Runtime, device int, size uint64, c config) (*Region, error) {
	if !c.method.registers() {
		return allocHost(rt, device, size, c)
	}
	r, err := allocRegistered(rt, device, size, c)
	if err == nil || !c.fallback || errors.Is(err, errLeftPinned) {
		return r, err
	}
	log := c.logger.Warn
	if c.flags&WriteCombined != 0 {
		log = c.logger.Info
	}
	log("pinned: falling back to MethodHostAlloc", zap.Stringer("asked", c.method), zap.Error(err))
	r, ferr := allocHost(rt, device, size, c)
	if ferr != nil {
		return nil, fmt.Errorf("%w; the fallback to MethodHostAlloc failed too: %w", err, ferr)
	}
	return r, nil
}
