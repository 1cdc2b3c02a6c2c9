package pool

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/dustin/go-humanize"

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
func WithHostPinning(m pinned.Method) Option { return func(c *config) { c.hostMethod = m } }

// WithHostFlags pins the host arena with cudaHostAlloc's flags:
// pinned.Portable (pinned for every CUDA context), pinned.Mapped (the arena
// also has a device address: Buffer.Ptr on a host buffer returns it, so a
// kernel can read the buffer in place) and pinned.WriteCombined (fast for the
// device to read over PCIe, very slow for the CPU to read; it needs
// cudaHostAlloc, which is then used whatever WithHostPinning says).
func WithHostFlags(f pinned.Flags) Option { return func(c *config) { c.hostFlags = f } }

func (p *Pool) newHostArena(n uint64, cfg config) (*arena, error) {
	r, err := pinned.Alloc(p.rt, p.device, n,
		pinned.WithMethod(cfg.hostMethod), pinned.WithFlags(cfg.hostFlags), pinned.WithLogger(p.log))
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s pinned host arena: %w", humanize.IBytes(n), err)
	}
	a := &arena{
		kind:     Host,
		capacity: n,
		host:     unsafe.Pointer(unsafe.SliceData(r.Bytes())),
		release:  r.Free,
		pinning:  r.Method(),
	}
	if cfg.hostFlags&pinned.Mapped != 0 {
		if a.devBase, err = r.DevicePtr(); err != nil {
			return nil, errors.Join(fmt.Errorf("pool: device address of the mapped host arena: %w", err), r.Free())
		}
	}
	return a, nil
}
