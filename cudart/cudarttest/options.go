package cudarttest

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/opt"
)

// Option configures a Fake. Options are values made by the With functions of
// this package; a nil one, or one no GPU could have, is refused with an error
// wrapping ErrInvalidOption.
type Option interface{ opt.Option[config] }

// option is an Option that may refuse its value, set one that cannot.
type option = opt.Func[config]

var set = opt.Set[config]

type config struct {
	devices     int
	deviceMem   uint64
	granularity uint64
	hostMem     uint64
	peers       [maxDevices]uint64 // bit p of peers[d]: d can access p's memory
	memcheck    bool
	longWork    bool
}

// maxDevices bounds WithDevices: access to virtual memory is kept as one bit
// per device.
const maxDevices = 64

func defaults() config {
	return config{
		devices:     1,
		deviceMem:   80 << 30,
		granularity: 2 << 20,
		hostMem:     64 << 30,
	}
}

// ErrInvalidOption means an option of NewFake, NewFakeT, Open or choose.Open
// was refused: nil, or a value no GPU could have; or that the runtime Open or
// choose.Open was asked for is none they know. The error wrapping it says
// which.
var ErrInvalidOption = errors.New("cudarttest: invalid option")

// CheckOptions is nil where NewFake takes opts, else the error, wrapping
// ErrInvalidOption, that NewFake would panic with: for a program that checks
// its options before it knows whether it will make a fake, as choose.Open
// does.
func CheckOptions(opts ...Option) error {
	_, err := configure(opts)
	return err
}

// configure applies opts to the defaults and checks what they make together.
func configure(opts []Option) (config, error) {
	c := defaults()
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		return config{}, err
	}
	return c, c.validate()
}

// WithDevices sets the number of devices (default 1). Zero is allowed, to
// test code on a machine with no GPU; at most 64.
func WithDevices(n int) Option {
	return option(func(c *config) error {
		if n < 0 || n > maxDevices {
			return fmt.Errorf("%w: WithDevices(%d): want 0 to %d", ErrInvalidOption, n, maxDevices)
		}
		c.devices = n
		return nil
	})
}

// WithDeviceMemory sets each device's memory in bytes (default 80 GiB, an
// 80 GiB H100). It is only a limit: bytes are backed when first written.
func WithDeviceMemory(bytes uint64) Option { return set(func(c *config) { c.deviceMem = bytes }) }

// WithGranularity sets the virtual memory allocation granularity, minimum and
// recommended alike (default 2 MiB, what current GPUs report). It must be a
// power of two.
func WithGranularity(bytes uint64) Option {
	return option(func(c *config) error {
		if !align.IsPowerOfTwo(bytes) || bytes < align.CUDA {
			return fmt.Errorf("%w: WithGranularity(%d): want a power of two of at least %d", ErrInvalidOption, bytes, align.CUDA)
		}
		c.granularity = bytes
		return nil
	})
}

// WithHostMemory limits the host memory pinned at once, by MallocHost,
// HostAlloc and HostRegister together (default 64 GiB): beyond it, they fail
// with cudaErrorMemoryAllocation, as CUDA does when the host has no more
// memory to pin. Pinned memory is mapped lazily, so only what is touched
// costs memory.
func WithHostMemory(bytes uint64) Option { return set(func(c *config) { c.hostMem = bytes }) }

// WithPeerAccess lets devices a and b access each other's memory
// (DeviceCanAccessPeer, MemSetAccess). By default no device can access
// another's, as on GPUs with neither NVLink nor PCIe peer-to-peer.
func WithPeerAccess(a, b int) Option {
	return option(func(c *config) error {
		if a < 0 || a >= maxDevices || b < 0 || b >= maxDevices || a == b {
			return fmt.Errorf("%w: WithPeerAccess(%d, %d): want two different devices, 0 to %d", ErrInvalidOption, a, b, maxDevices-1)
		}
		c.peers[a] |= 1 << b
		c.peers[b] |= 1 << a
		return nil
	})
}

// WithMemcheck makes the fake enforce the memory annotations
// (cudart.Annotations), as compute-sanitizer's memcheck does: a copy, memset,
// asynchronous copy or kernel access that touches a byte of a registered heap
// that no registered region covers fails with cudaErrorIllegalAddress (700),
// and the error names the nearest region (its name and size) and how far
// outside it the byte is. Synchronous calls return the error; work run from
// a stream (a kernel, a device-to-device copy) faults the device, as a
// kernel's illegal access does, and a later synchronisation reports it.
// Memory outside every heap is checked as without the option.
//
// NewFakeT and Open turn it on; NewFake leaves it off unless asked.
func WithMemcheck() Option { return set(func(c *config) { c.memcheck = true }) }

// WithoutMemcheck turns off the memcheck that NewFakeT and Open turn on, for
// a test that accesses an annotated heap outside its regions on purpose, or
// that counts the annotation calls a tool would see. The leak check stays.
func WithoutMemcheck() Option { return set(func(c *config) { c.memcheck = false }) }

// WithLongWork makes queued work long: it runs only when a
// synchronisation waits for it, and until then every query (StreamQuery,
// EventQuery) says it is not done, as a GPU's would of work that takes
// longer than the test polls. For a test of what a program does while its
// work still runs (a pool's slot released with work queued, handed on
// only once its stream is synchronised), which on a GPU depends on timing.
// By default work progresses at queries, as on a GPU (see StreamQuery).
func WithLongWork() Option { return set(func(c *config) { c.longWork = true }) }

// strict puts the memcheck in front of opts: a test's own options, applied
// after it, may turn it off.
func strict(opts []Option) []Option {
	return append([]Option{WithMemcheck()}, opts...)
}

// validate refuses what options name together that no GPU could have: peer
// access for a device the fake lacks.
func (c config) validate() error {
	for d := c.devices; d < maxDevices; d++ {
		if c.peers[d] != 0 {
			return fmt.Errorf("%w: WithPeerAccess names device %d of %d", ErrInvalidOption, d, c.devices)
		}
	}
	return nil
}
