package vmem

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/opt"
)

// Option configures an Arena or a Vector. Options are values made by the
// With functions of this package, applied before any CUDA call; a nil one is
// refused with an error wrapping ErrInvalidOption.
type Option interface{ opt.Option[config] }

// set makes the package's options, none of which can fail.
var set = opt.Set[config]

type config struct {
	peers   []int
	chunk   uint64            // 0: the recommended granularity
	handles cudart.HandleType // requestedHandleTypes of every growth
}

// WithPeers grants read-write access to the memory to the listed devices as
// well as to the owner, for multi-GPU hosts: a kernel or copy on a peer then
// reads and writes it directly over NVLink or PCIe. Access for the owner and
// every peer is set by one cuMemSetAccess call per growth. CUDA refuses a
// peer that cannot access the owner's memory; the growth then fails and
// changes nothing.
func WithPeers(devices ...int) Option {
	return set(func(c *config) { c.peers = append(c.peers, devices...) })
}

// WithChunk sets the unit in which mapped memory grows: each growth maps the
// whole missing range, rounded up to a multiple of bytes, with one
// cuMemCreate. The default is the device's recommended allocation
// granularity (2 MiB on current GPUs), which wastes the least; a larger
// chunk makes fewer, larger growths when a caller grows in small steps, as
// a pool placing buffers one by one does. bytes must be a multiple of the
// recommended granularity; 0 keeps the default.
func WithChunk(bytes uint64) Option { return set(func(c *config) { c.chunk = bytes }) }

// WithHandleTypes makes the physical memory exportable as types, e.g.
// cudart.HandleTypePOSIXFileDescriptor: every growth's cuMemCreate requests
// them (CUmemAllocationProp.requestedHandleTypes), and the granularity (the
// reservation's alignment, the default chunk and what WithChunk must be a
// multiple of) is the recommended one of memory so made. This is how NCCL's
// ncclMemAlloc makes memory, and what it needs of a window's
// (nccl.Comm.RegisterWindow): an Arena made with
// WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor) qualifies, each
// window within one growth (see the package's Caveats). CUDA refuses a type
// the platform or the device does not support, at NewArena or NewVector or
// at the first growth.
func WithHandleTypes(types cudart.HandleType) Option {
	return set(func(c *config) { c.handles = types })
}

// settings is what NewArena and NewVector derive from the options and the
// device.
type settings struct {
	gran    uint64 // recommended allocation granularity
	chunk   uint64 // growth unit, a multiple of gran
	access  []int  // the owner first, then the peers
	handles cudart.HandleType
}

// configure applies opts.
func configure(opts []Option) (config, error) {
	var o config
	err := opt.Configure(&o, opts, ErrInvalidOption)
	return o, err
}

func newSettings(device int, gran uint64, o config) (settings, error) {
	s := settings{gran: gran, chunk: gran, access: []int{device}, handles: o.handles}
	if o.chunk != 0 {
		if o.chunk%gran != 0 {
			return settings{}, fmt.Errorf("%w: WithChunk(%d) is not a multiple of the allocation granularity %d", ErrInvalidOption, o.chunk, gran)
		}
		s.chunk = o.chunk
	}
	for _, d := range o.peers {
		if d < 0 {
			return settings{}, fmt.Errorf("%w: WithPeers: device %d", ErrInvalidOption, d)
		}
		if !slices.Contains(s.access, d) {
			s.access = append(s.access, d)
		}
	}
	return s, nil
}
