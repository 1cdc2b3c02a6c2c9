package cudarttest

import (
	"fmt"

	"github.com/cudapool/cudapool/align"
)

// Option configures a Fake.
type Option func(*options)

type options struct {
	devices     int
	deviceMem   uint64
	granularity uint64
	hostMem     uint64
	peers       [maxDevices]uint64 // bit p of peers[d]: d can access p's memory
	badPeers    [][2]int           // WithPeerAccess pairs that name no two devices
	memcheck    bool
}

// maxDevices bounds WithDevices: access to virtual memory is kept as one bit
// per device.
const maxDevices = 64

func defaultOptions() options {
	return options{
		devices:     1,
		deviceMem:   80 << 30,
		granularity: 2 << 20,
		hostMem:     64 << 30,
	}
}

// newOptions applies opts to the defaults.
func newOptions(opts []Option) options {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithDevices sets the number of devices (default 1). Zero is allowed, to
// test code on a machine with no GPU; at most 64.
func WithDevices(n int) Option { return func(o *options) { o.devices = n } }

// WithDeviceMemory sets each device's memory in bytes (default 80 GiB, an
// 80 GiB H100). It is only a limit: bytes are backed when first written.
func WithDeviceMemory(bytes uint64) Option { return func(o *options) { o.deviceMem = bytes } }

// WithGranularity sets the virtual memory allocation granularity, minimum and
// recommended alike (default 2 MiB, what current GPUs report). It must be a
// power of two.
func WithGranularity(bytes uint64) Option { return func(o *options) { o.granularity = bytes } }

// WithHostMemory limits the host memory pinned at once, by MallocHost,
// HostAlloc and HostRegister together (default 64 GiB): beyond it, they fail
// with cudaErrorMemoryAllocation, as CUDA does when the host has no more
// memory to pin. Pinned memory is mapped lazily, so only what is touched
// costs memory.
func WithHostMemory(bytes uint64) Option { return func(o *options) { o.hostMem = bytes } }

// WithPeerAccess lets devices a and b access each other's memory
// (DeviceCanAccessPeer, MemSetAccess). By default no device can access
// another's, as on GPUs with neither NVLink nor PCIe peer-to-peer.
func WithPeerAccess(a, b int) Option {
	return func(o *options) {
		if a >= 0 && a < maxDevices && b >= 0 && b < maxDevices && a != b {
			o.peers[a] |= 1 << b
			o.peers[b] |= 1 << a
			return
		}
		o.badPeers = append(o.badPeers, [2]int{a, b})
	}
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
func WithMemcheck() Option { return func(o *options) { o.memcheck = true } }

// WithoutMemcheck turns off the memcheck that NewFakeT and Open turn on, for
// a test that accesses an annotated heap outside its regions on purpose, or
// that counts the annotation calls a tool would see. The leak check stays.
func WithoutMemcheck() Option { return func(o *options) { o.memcheck = false } }

// strict puts the memcheck in front of opts: a test's own options, applied
// after it, may turn it off.
func strict(opts []Option) []Option {
	return append([]Option{WithMemcheck()}, opts...)
}

// validate reports options no GPU could have; NewFake panics on them, since
// they are a mistake in the test, not a condition to handle.
func (o options) validate() error {
	if o.devices < 0 || o.devices > maxDevices {
		return fmt.Errorf("cudarttest: WithDevices(%d): want 0 to %d", o.devices, maxDevices)
	}
	if len(o.badPeers) > 0 {
		p := o.badPeers[0]
		return fmt.Errorf("cudarttest: WithPeerAccess(%d, %d): want two different devices of %d", p[0], p[1], o.devices)
	}
	for d := o.devices; d < maxDevices; d++ {
		if o.peers[d] != 0 {
			return fmt.Errorf("cudarttest: WithPeerAccess names device %d of %d", d, o.devices)
		}
	}
	if !align.IsPowerOfTwo(o.granularity) || o.granularity < align.CUDA {
		return fmt.Errorf("cudarttest: WithGranularity(%d): want a power of two of at least %d", o.granularity, align.CUDA)
	}
	return nil
}
