package kvcache

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/opt"
)

// Option configures New. Options are values made by the With functions of
// this package; a nil one is refused with an error wrapping
// ErrInvalidOption.
type Option interface{ opt.Option[config] }

type option = opt.Func[config]

type config struct {
	// The page arena's size: exactly one of the three is set, else fraction
	// is the default.
	bytes     uint64
	pages     int
	fraction  float64
	sized     int // how many options changed the size
	watermark float64
	stream    cudart.Stream
	swap      int // host pages of the swap space
}

func defaults() config { return config{fraction: 0.9, watermark: 0.01} }

// size sets the page arena's size, counting the options that change it: a
// second one that does is refused, an option that repeats the size is not.
func (c *config) size(bytes uint64, pages int, fraction float64) {
	if c.bytes != bytes || c.pages != pages || c.fraction != fraction {
		c.sized++
	}
	c.bytes, c.pages, c.fraction = bytes, pages, fraction
}

func configure(opts []Option) (config, error) {
	c := defaults()
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		return config{}, err
	}
	if c.sized > 1 {
		return config{}, fmt.Errorf("%w: the page arena is sized twice (WithBytes, WithPages, WithFreeFraction: give one)", ErrInvalidOption)
	}
	return c, nil
}

// WithBytes sizes the page arena in bytes, rounded down to whole pages.
func WithBytes(n uint64) Option {
	return option(func(c *config) error {
		if n == 0 {
			return fmt.Errorf("%w: WithBytes(0)", ErrInvalidOption)
		}
		c.size(n, 0, 0)
		return nil
	})
}

// WithPages sizes the page arena as n pages.
func WithPages(n int) Option {
	return option(func(c *config) error {
		if n <= 0 || n > maxPages {
			return fmt.Errorf("%w: WithPages(%d): want 1 to %d", ErrInvalidOption, n, maxPages)
		}
		c.size(0, n, 0)
		return nil
	})
}

// WithFreeFraction sizes the page arena as fraction f (0 < f <= 1) of the
// device arena's room after the buffers already placed or queued in the pool
// (the model's weights and activations): vLLM's gpu_memory_utilization,
// applied to the pool's arena rather than the whole GPU. The default is 0.9.
//
// On a growable arena (pool.WithGrowableDevice) the room is memory, not
// address space: what the arena has mapped and not used plus the device's
// free memory (cudaMemGetInfo) at New, less what the queued buffers will
// map, and no more than its address space left. New maps the pages at
// once, as Satisfy maps every buffer placed: the cache does not grow after,
// and the rest of the device's memory stays for other programs. With f
// near 1 the mapping, rounded up to whole granules, may not fit: New then
// fails with the pool's error.
func WithFreeFraction(f float64) Option {
	return option(func(c *config) error {
		if !(f > 0 && f <= 1) {
			return fmt.Errorf("%w: WithFreeFraction(%v): want 0 < f <= 1", ErrInvalidOption, f)
		}
		c.size(0, 0, f)
		return nil
	})
}

// WithWatermark makes Admit keep fraction f (0 <= f < 1) of the pages free
// for the running sequences to grow into, as vLLM's watermark does; the
// default is 0.01. Append ignores it: a running sequence may take the last
// page.
func WithWatermark(f float64) Option {
	return option(func(c *config) error {
		if !(f >= 0 && f < 1) {
			return fmt.Errorf("%w: WithWatermark(%v): want 0 <= f < 1", ErrInvalidOption, f)
		}
		c.watermark = f
		return nil
	})
}

// WithSwap reserves a swap space of n host pages in the pool's pinned host
// arena (placed with the device pages by New), which SwapOut moves
// preempted sequences' pages to. The default is none: SwapOut refuses
// every sequence with ErrNoSwap.
func WithSwap(n int) Option {
	return option(func(c *config) error {
		if n < 0 || n > maxPages {
			return fmt.Errorf("%w: WithSwap(%d): want 0 to %d", ErrInvalidOption, n, maxPages)
		}
		c.swap = n
		return nil
	})
}

// WithStream queues the cache's copies (copy-on-write, page tables,
// swapping) on s, the stream the program's kernels read the pages on, so
// that a copy runs after the kernels queued before it and before those
// queued after. The default is the legacy default stream. New checks s
// (cudaStreamGetDevice, which queues nothing): a stream the runtime does
// not know (destroyed, or never created) or one of another device than the
// pool's is refused with ErrInvalidOption. Before CUDA 12.8, which added
// that call, a stream the binding did not create is taken unchecked.
func WithStream(s cudart.Stream) Option {
	return option(func(c *config) error {
		c.stream = s
		return nil
	})
}
