package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/pinned"
)

// WithHostPinning selects how the host arena is pinned. The default,
// pinned.MethodRegister, maps the memory, asks for transparent huge pages,
// touches it from every core and registers it with cudaHostRegister: several
// times faster than cudaMallocHost for large arenas, with the same copy
// bandwidth. It falls back to cudaHostAlloc where registration is refused;
// Stats.HostPinning says which method was used. pinned.MethodHostAlloc is
// the C++ pool's cudaMallocHost. A registered host arena over 256 GiB is
// pinned in 256 GiB chunks, and one CUDA copy must not span two of them (see
// package pinned); with cudaHostAlloc there is no such limit.
func WithHostPinning(m pinned.Method) Option { return set(func(c *config) { c.hostMethod = m }) }

// WithHostFlags pins the host arena with cudaHostAlloc's flags:
// pinned.Portable (pinned for every CUDA context), pinned.Mapped (the arena
// also has a device address: Buffer.Ptr on a host buffer returns it, so a
// kernel can read the buffer in place) and pinned.WriteCombined (fast for the
// device to read over PCIe, very slow for the CPU to read; it needs
// cudaHostAlloc, which is then used whatever WithHostPinning says).
func WithHostFlags(f pinned.Flags) Option { return set(func(c *config) { c.hostFlags = f }) }

// pinnedHost is the host arena: page-locked memory from package pinned,
// mapped into the device address space when pinned.Mapped was asked for.
type pinnedHost struct {
	r      *pinned.Region
	bytes  []byte
	devPtr cudart.DevicePtr // 0 unless mapped
	freed  bool
}

func reservePinnedHost(rt cudart.Runtime, dev int, n uint64, cfg *config) (*pinnedHost, error) {
	r, err := pinned.Alloc(rt, dev, n,
		pinned.WithMethod(cfg.hostMethod), pinned.WithFlags(cfg.hostFlags), pinned.WithLogger(cfg.logger))
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s pinned host arena: %w", bytesize.Format(n), err)
	}
	a := &pinnedHost{r: r, bytes: r.Bytes()}
	if cfg.hostFlags&pinned.Mapped != 0 {
		if a.devPtr, err = r.DevicePtr(); err != nil {
			return nil, errors.Join(fmt.Errorf("pool: device address of the mapped host arena: %w", err), r.Free())
		}
	}
	return a, nil
}

func (a *pinnedHost) capacity() uint64              { return uint64(len(a.bytes)) }
func (a *pinnedHost) back(uint64) error             { return nil }
func (a *pinnedHost) device() cudart.DevicePtr      { return a.devPtr }
func (a *pinnedHost) host() []byte                  { return a.bytes }
func (a *pinnedHost) release() error                { return nil }
func (a *pinnedHost) stats(s ArenaStats) ArenaStats { return s }

func (a *pinnedHost) annotatable() bool { return true }

// forget is close: package pinned sees the reset and forgets the region.
func (a *pinnedHost) forget() error { return a.close() }

func (a *pinnedHost) close() error {
	if a.freed {
		return nil
	}
	if err := a.r.Free(); err != nil {
		return fmt.Errorf("pool: free %s pinned host arena: %w", bytesize.Format(a.capacity()), err)
	}
	a.freed, a.bytes = true, nil
	return nil
}
