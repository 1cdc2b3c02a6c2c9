package cudarttest

import (
	"sync"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// Fake is an in-process CUDA runtime: see the package documentation. The
// zero value is not usable; call NewFake.
type Fake struct {
	opts config // fixed at NewFake

	// mu guards everything below: the address space and the bytes behind
	// it, host memory, streams, physical handles, per-device state, the call
	// log and the pending faults.
	mu sync.Mutex

	// resets counts, per device, the DeviceReset calls that succeeded, kept
	// across them. It is written under mu and read without it, as CUDA's
	// binding reads its count, so that DeviceResets, asked at every
	// Acquire and Release of the pool's slots, costs what it costs on a
	// GPU.
	resets []atomic.Uint64

	devs    []deviceState
	regions []*region           // live device address ranges, sorted by base
	next    uint64              // where the next range may start
	freed   map[uint64]struct{} // bases of freed ranges, for messages

	hosts    []*hostRange // pinned and registered host memory, sorted by start
	hostUsed uint64       // bytes pinned: MallocHost, HostAlloc and HostRegister

	streams    map[cudart.Stream]streamInfo
	nextStream cudart.Stream
	issued     uint64 // the id of the work queued last (pending.id)

	phys       map[cudart.PhysHandle]*physical
	nextHandle cudart.PhysHandle

	calls []calls.Call
	seq   int // calls made since NewFake; ResetCalls leaves it alone
	// origins are where each call that made something came from, by seq,
	// for leak reports; nil unless NewFakeT made the fake.
	origins map[int]origin
	faults  []fault

	scratch, scratch2 []span // resolve buffers reused by copies

	kern  kernelState  // modules, functions and the Go kernels behind them
	libs  libraryState // the libraries attached (Attach) and what they made
	evs   eventState   // events
	graph captureState // stream captures, graphs and their instantiations
	annot annotState   // memory annotations: heaps and regions
}

// deviceState is what the fake keeps per device: what DeviceReset resets.
type deviceState struct {
	used      uint64 // bytes counted against the device, the heap included
	limits    [3]uint64
	heap      uint64 // bytes of the malloc heap counted in used
	flags     cudart.DeviceFlags
	threshold uint64 // default memory pool's release threshold

	// mallocChunks and asyncChunks are the chunks cudaMalloc's and
	// cudaMallocAsync's small allocations share: 2 MiB chunks, 32 MiB
	// segments.
	mallocChunks, asyncChunks chunkPool

	queue []pending // work queued on the device's streams, in issue order
	// seen is, by canonical stream, the latest work a StreamQuery of the
	// stream has seen (see poll).
	seen       map[cudart.Stream]uint64
	sticky     *failure    // the fault every call returns until DeviceReset
	asyncFault cudart.Code // FailAsync's code for the next work to run; 0 for none
	// lost is what every call that needs the device's context returns,
	// DeviceReset included, once a reset followed a fatal fault: kept
	// across resets, as only a new process recovers.
	lost *failure
}

// chunks is the chunk pool of allocations of kind k.
func (d *deviceState) chunks(k kind) *chunkPool {
	if k == kindAsync {
		return &d.asyncChunks
	}
	return &d.mallocChunks
}

// freshDevice is a device as NewFake and DeviceReset leave it.
func freshDevice() deviceState {
	return deviceState{
		limits:       defaultLimits,
		flags:        cudart.DeviceMapHost,
		mallocChunks: chunkPool{unit: chunkBytes},
		asyncChunks:  chunkPool{unit: segmentBytes},
	}
}

// The compile-time proof that the fake offers every ability.
var _ cudart.Full = (*Fake)(nil)

// NewFake returns a fake runtime with one device of 80 GiB unless options say
// otherwise. It panics, with an error wrapping ErrInvalidOption, on a nil
// option or one no GPU could have (a negative device count, a granularity
// that is not a power of two): they are a mistake in the test, not a
// condition to handle.
func NewFake(opts ...Option) *Fake {
	o, err := configure(opts)
	if err != nil {
		panic(err)
	}
	f := &Fake{
		opts:       o,
		devs:       make([]deviceState, o.devices),
		resets:     make([]atomic.Uint64, o.devices),
		next:       spaceBase,
		freed:      make(map[uint64]struct{}),
		streams:    make(map[cudart.Stream]streamInfo),
		nextStream: firstStream,
		phys:       make(map[cudart.PhysHandle]*physical),
		nextHandle: 1,
	}
	for i := range f.devs {
		f.devs[i] = freshDevice()
	}
	return f
}

// TB is the part of testing.TB that NewFakeT uses; *testing.T and
// *testing.B satisfy it. It is declared here so that the package, and a
// program that links the fake, need not import testing.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// NewFakeT returns a fake that is strict by default: WithMemcheck is on
// (WithoutMemcheck turns it off), so an access past a buffer of an annotated
// pool fails the call at once, naming the buffer; and a cleanup fails t,
// listing what was never freed, when the test ends with something still
// allocated. Options no GPU could have fail t at once. Cleanups run
// last-registered first, so create the fake before whatever frees into it at
// cleanup.
func NewFakeT(t TB, opts ...Option) *Fake {
	t.Helper()
	opts = strict(opts)
	if _, err := configure(opts); err != nil {
		t.Fatalf("%v", err)
	}
	f := NewFake(opts...)
	f.origins = make(map[int]origin)
	t.Cleanup(func() {
		if err := f.CheckLeaks(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return f
}

// device checks a device ordinal.
func (f *Fake) device(d int) *failure {
	if d < 0 || d >= len(f.devs) {
		return fail(101, "device %d of %d", d, len(f.devs))
	}
	return nil
}

// charge counts n bytes against device d, failing when they are not free.
func (f *Fake) charge(d int, n uint64) *failure {
	ds := &f.devs[d]
	if free := f.opts.deviceMem - ds.used; n > free {
		return fail(2, "asked for %s, %s free of %s on device %d", bytesize.Format(n), bytesize.Format(free), bytesize.Format(f.opts.deviceMem), d)
	}
	ds.used += n
	return nil
}
