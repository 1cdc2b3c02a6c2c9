package cudarttest

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// Synchronize runs everything queued on device, as cudaDeviceSynchronize
// does, the call not logged: for the library's calls that CUDA documents as
// synchronising the device (cublasDestroy). With streams, it runs only what
// is queued on those streams of device and what that work waits for, as
// cudaStreamSynchronize does each (NCCL's finalisation of a communicator).
// It returns the device's sticky fault, if any, as SetDevice does for a
// device that does not work, and refuses a stream as Enqueue does.
func (l *Library) Synchronize(device int, streams ...cudart.Stream) error {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.device(device)
	if x == nil && len(streams) == 0 {
		x = f.syncDevice(device)
	}
	for _, s := range streams {
		if x != nil {
			break
		}
		if x = f.ownStream(device, s); x == nil {
			x = f.drain(device, s)
		}
	}
	if x != nil {
		return x.err(calls.DeviceSynchronize, "(%d) for %s", device, l.name)
	}
	return nil
}

// ownStream checks s as a stream of device, which works, for the library's
// work: a default stream, or a live stream of device.
func (f *Fake) ownStream(device int, s cudart.Stream) *failure {
	d, x := f.streamOn(device, s)
	if x == nil && d != device {
		x = fail(400, "stream 0x%x is of device %d", uintptr(s), d)
	}
	return x
}

// Allocation is the device allocation that holds an address, as the driver
// tells a library: cuMemGetAddressRange its bounds, cuPointerGetAttribute
// its device, cuMemRetainAllocationHandle whether it is physical memory from
// cuMemCreate, and the handle's properties how it exports.
type Allocation struct {
	Device int
	// Base and End bound the allocation: a cudaMalloc's whole, or, in
	// virtual memory, the one mapping of a cuMemCreate allocation that
	// holds the address, not the reservation around it (a range grown by
	// several mappings is several allocations, as cuMemGetAddressRange
	// tells).
	Base, End cudart.DevicePtr
	// Physical: memory from cuMemCreate, whose handle a library can retain
	// and share; false for the runtime's allocations (cudaMalloc and the
	// others).
	Physical bool
	// HandleTypes are the types physical memory exports as
	// (MemCreateExportable); 0 for none.
	HandleTypes cudart.HandleType
}

// Allocation is the device allocation that holds p, the call not logged.
// It reports false for an address in no allocation of device memory (host
// memory mapped for the device included, and a reservation's addresses
// that are not mapped): for libraries that register the caller's buffers
// (NCCL's ncclCommRegister and its windows).
func (l *Library) Allocation(p cudart.DevicePtr) (Allocation, bool) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.containing(uint64(p))
	switch {
	case r == nil || r.kind == kindHostAlias:
		return Allocation{}, false
	case r.kind != kindReservation:
		return Allocation{Device: r.device, Base: cudart.DevicePtr(r.base), End: cudart.DevicePtr(r.end())}, true
	}
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end() > uint64(p) })
	if i == len(r.maps) || r.maps[i].va > uint64(p) {
		return Allocation{}, false
	}
	m := r.maps[i]
	return Allocation{Device: m.phys.device, Base: cudart.DevicePtr(m.va), End: cudart.DevicePtr(m.end()), Physical: true, HandleTypes: m.phys.types}, true
}

// Work is a library call's work on a stream: one of the library's kernels.
type Work struct {
	Device int           // the call's device
	Stream cudart.Stream // a stream of Device, or a default stream
	Call   string        // the library's call that queues it, for messages
	// Scratch marks work that takes memory from the stream's memory pool
	// around its kernel, as cuBLAS does with no workspace set: a capture
	// records a memory-allocation node before its kernel node and a
	// memory-free node after, as CUDA's would. The fake charges nothing for
	// it.
	Scratch bool
	// Serial, when not 0, marks work a library orders through a stream of
	// its own that Serial names, as NCCL orders a communicator's kernels
	// (its strong stream, with graph mixing, NCCL's default): a capture
	// records an event-wait node before the first work of each Serial it
	// holds, and an event-record node after each such work, as CUDA
	// records NCCL's cudaStreamWaitEvent with cudaEventWaitExternal and its
	// cudaGraphAddEventRecordNode. The nodes run nothing at a launch.
	Serial uintptr
	// Run does the work when a synchronisation reaches it, or a query
	// that found that it can run (Ready). An error faults the device:
	// cudaErrorIllegalAddress, or the code of a *cudart.Error it wraps
	// where FailAsync takes that code, with the error's text.
	Run func(a *Access) error
	// Key, when not nil, names the work for other work's Ready
	// (Progress.Reaches) and Run (Access.Wait): a comparable value, as a
	// map key is, such as a pointer to the library's own record of it.
	Key any
	// Ready, when set, reports whether Run could run now without failing
	// for want of work not yet queued: a piece of a collective whose
	// peers' pieces are not all queued. A query (cudaStreamQuery,
	// cudaEventQuery) runs the work it asks about only if every piece of
	// it can run, and otherwise runs nothing and says it is not done, as a
	// GPU's kernel that waits for its peers is not; a synchronisation runs
	// the work whatever Ready says. Ready runs under the fake's lock, as
	// Run does, and must change nothing. Nil: the work can always run.
	Ready func(p *Progress) bool
}

// Enqueue queues w on its stream, to run in stream order with the rest of
// the device's work (see the package documentation), or records it into the
// stream's capture, to run at each launch of the graph. It refuses, queueing
// nothing, a device that does not work (as SetDevice), a stream that is not
// live or is another device's (cudaErrorInvalidResourceHandle), and work on
// the legacy default stream while a stream of the device captures, which
// invalidates the capture, as CUDA does.
func (l *Library) Enqueue(w Work) error {
	return l.EnqueueAll(w)[0]
}

// EnqueueAll queues each of ws as Enqueue does, in order, under one hold
// of the fake's lock: no other goroutine's synchronisation or query sees
// some of them queued and not the others. It is for the pieces of one
// collective on its ranks' devices, which one call of the library
// launches: queued one at a time, a synchronisation of a device between
// two of them would run a piece whose peer's is not yet queued, and fail
// it, where a GPU's kernel waits for its peer's, launched moments later by
// the same call. errs[i] is Enqueue's error for ws[i], nil when it was
// queued; one refused does not keep the others from being queued.
func (l *Library) EnqueueAll(ws ...Work) (errs []error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	errs = make([]error, len(ws))
	for i, w := range ws {
		if x := f.enqueueWork(w); x != nil {
			errs[i] = x.err(calls.CuLaunchKernel, " for %s on device %d", w.Call, w.Device)
		}
	}
	return errs
}

// enqueueWork is Enqueue under the fake's lock.
func (f *Fake) enqueueWork(w Work) *failure {
	if x := f.ownStream(w.Device, w.Stream); x != nil {
		return x
	}
	run := func() *failure {
		err := w.Run(&Access{f: f, device: w.Device, call: w.Call})
		if err == nil {
			return nil
		}
		x := &failure{code: 700, why: err.Error()}
		if ce := (*cudart.Error)(nil); errors.As(err, &ce) {
			x.code = ce.Code
		}
		return x
	}
	if x := f.devs[w.Device].sticky; x != nil {
		return x
	}
	cp := f.graph.captures[w.Stream]
	if cp != nil && w.Serial != 0 && !cp.serials[w.Serial] {
		if cp.serials == nil {
			cp.serials = make(map[uintptr]bool)
		}
		cp.serials[w.Serial] = true
		cp.mark(calls.StreamWaitEvent, cudart.GraphNodeWaitEvent)
	}
	captured := w.Scratch && f.recordMemNode(w.Stream, cudart.GraphNodeMemAlloc)
	t := task{op: run, ready: w.Ready}
	if w.Key != nil {
		t.keys = []any{w.Key}
	}
	if _, x := f.enqueueTask(w.Device, w.Stream, calls.CuLaunchKernel, t); x != nil {
		return x
	}
	if captured {
		f.recordMemNode(w.Stream, cudart.GraphNodeMemFree)
	}
	if cp != nil && w.Serial != 0 {
		cp.mark(calls.EventRecord, cudart.GraphNodeEventRecord)
	}
	return nil
}

// Access is what a library's Work reaches device memory through while it
// runs. Each access is checked as a kernel's is: it must lie in a live
// allocation or in mapped memory the device may access, and under
// WithMemcheck in the regions annotated when the work was queued. An
// access that fails changes nothing, and its error says why, naming the
// buffer, for the library's message.
type Access struct {
	f      *Fake
	device int
	call   string
}

// Read copies len(b) bytes of device memory at p into b.
func (a *Access) Read(p cudart.DevicePtr, b []byte) error {
	if x := a.f.memcpy(a.device, cudart.HostMem(b), cudart.DeviceMem(p, uint64(len(b))), cudart.DeviceToHost, true); x != nil {
		return fmt.Errorf("%s reads %s at %s: %s", a.call, bytesize.Exact(uint64(len(b))), p, x.why)
	}
	return nil
}

// Write copies b to device memory at p.
func (a *Access) Write(p cudart.DevicePtr, b []byte) error {
	if x := a.f.memcpy(a.device, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice, true); x != nil {
		return fmt.Errorf("%s writes %s at %s: %s", a.call, bytesize.Exact(uint64(len(b))), p, x.why)
	}
	return nil
}

// Check checks an access of n bytes at p, a write if write, as Read and
// Write do, copying nothing: for work that checks all it touches before it
// changes anything. The error is why the access would fail.
func (a *Access) Check(p cudart.DevicePtr, n uint64, write bool) error {
	verb := "read"
	if write {
		verb = "write"
	}
	if x := a.f.accessible(a.device, uint64(p), n, verb); x != nil {
		return errors.New(x.why)
	}
	return nil
}

// accessible checks an access of n bytes at a on device, as a kernel's
// reads and writes are checked, copying nothing.
func (f *Fake) accessible(device int, a, n uint64, verb string) *failure {
	if x := f.memcheck(a, n, verb); x != nil {
		return x
	}
	_, x := f.resolveScratch(cudart.DevicePtr(a), n, device)
	return x
}

// Buffer is the buffer that holds address p, for messages: under
// WithMemcheck the annotated one (a pool's buffer), else the allocation;
// its name and its end. It reports false when p is in neither, or in an
// annotated heap but in none of its regions.
func (a *Access) Buffer(p cudart.DevicePtr) (name string, end cudart.DevicePtr, ok bool) {
	f := a.f
	if f.opts.memcheck {
		reg := f.annotations()
		if r, ok := reg.Containing(uint64(p)); ok {
			return r.Label(), cudart.DevicePtr(r.End()), true
		}
		if reg.Check(uint64(p), 1) != nil {
			return "", 0, false
		}
	}
	if r := f.containing(uint64(p)); r != nil {
		return r.describe(), cudart.DevicePtr(r.end()), true
	}
	return "", 0, false
}

// Wait runs what is queued on stream s of device up to and including its
// first work of key (Work.Key; a graph's launch that holds it), and what
// that work waits for, before it returns, as a stream's wait for an event
// recorded on s after that work would when it runs: for work that spans
// devices, a collective's (see Library). It runs nothing when s holds no
// work of key. Its error is device's sticky fault, or why s was refused.
func (a *Access) Wait(device int, s cudart.Stream, key any) error {
	f := a.f
	x := f.ownStream(device, s)
	if x == nil {
		i := slices.IndexFunc(f.devs[device].queue, func(p pending) bool { return p.stream == canonical(s) && p.holds(key) })
		if i >= 0 {
			x = f.runUpTo(device, s, f.devs[device].queue[i].id)
		}
	}
	if x != nil {
		return fmt.Errorf("%s waits for stream 0x%x of device %d: %s", a.call, uintptr(s), device, x.why)
	}
	return nil
}

// On is the Access of device's memory, checked as device's kernels'
// accesses are: for work that spans devices, once Wait has run what that
// device's part of it waits for. A device the fake lacks gives an Access
// whose every access fails.
func (a *Access) On(device int) *Access {
	return &Access{f: a.f, device: device, call: a.call}
}
