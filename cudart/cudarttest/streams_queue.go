package cudarttest

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// pending is one piece of asynchronous work queued on a stream.
type pending struct {
	stream cudart.Stream // canonical: 0 for the legacy default stream
	name   calls.Call    // the call that queued it
	op     func() *failure
	due    bool // marked to run by the synchronisation under way
}

// legacyStream is the canonical handle of the legacy default stream, which
// CUDA names 0 and cudaStreamLegacy alike.
const legacyStream cudart.Stream = 0

func canonical(s cudart.Stream) cudart.Stream {
	if s == streamLegacyHandle {
		return legacyStream
	}
	return s
}

// enqueue queues op, the work of call name, on stream s of device dev. It
// runs at the first synchronisation point that waits for it (drain,
// syncDevice), in issue order with the rest of dev's work; what it returns
// then is an asynchronous fault: CUDA reports it as
// cudaErrorIllegalAddress, or as the code a kernel faulted with or
// FailAsync injected, from that point on and from every later call on dev
// until DeviceReset (sticky), which leaves dev lost.
// The caller checks the arguments first, so that what CUDA refuses at once
// is refused at once; op checks again when it runs, since memory can go
// away in between. enqueue returns the sticky error of dev, if any, and
// queues nothing then. On a stream that captures, op is recorded into the
// capture instead, to run each time its graph is launched. Work on the
// legacy default stream while a stream of dev captures is refused, and
// invalidates the capture, as CUDA does: it would wait for the capture.
//
// Every stream is a blocking stream (StreamCreate takes no flags) and
// cudaStreamPerThread is one stream for the whole process, as Go has no
// thread to tie it to; the legacy default stream orders with every other:
// its work waits for all earlier work of dev, and later work waits for it.
func (f *Fake) enqueue(dev int, s cudart.Stream, name calls.Call, op func() *failure) *failure {
	ds := &f.devs[dev]
	if ds.sticky != nil {
		return ds.sticky
	}
	if canonical(s) == legacyStream {
		if x := f.captureBlocksSync(dev, legacyStream); x != nil {
			return x
		}
	}
	if f.graph.record(s, name, op) {
		return nil
	}
	if f.opts.memcheck {
		op = f.annot.checkedAsOf(op)
	}
	ds.queue = append(ds.queue, pending{stream: canonical(s), name: name, op: op})
	return nil
}

// drain runs what is queued on stream s of device dev, and the work that
// work waits for: the earlier work of s, the earlier work of the legacy
// default stream and, behind a legacy default stream operation, all earlier
// work. It is cudaStreamSynchronize's part; the first fault stops it, makes
// the error sticky, and drops the rest of dev's queue, as a context that
// faulted runs nothing more. A synchronisation with a capturing stream is
// refused, and invalidates the capture, as in CUDA.
func (f *Fake) drain(dev int, s cudart.Stream) *failure {
	if x := f.captureBlocksSync(dev, s); x != nil {
		return x
	}
	ds := &f.devs[dev]
	s = canonical(s)
	last := -1
	for i := range ds.queue {
		if ds.queue[i].stream == s {
			last = i
		}
	}
	all := false
	for i := last; i >= 0; i-- {
		p := &ds.queue[i]
		if all || p.stream == s || p.stream == legacyStream {
			p.due = true
			all = all || p.stream == legacyStream
		}
	}
	return f.run(dev)
}

// queued reports whether work of stream s is queued on device dev: any
// work at all for the legacy default stream, which waits for all of it.
func (f *Fake) queued(dev int, s cudart.Stream) bool {
	s = canonical(s)
	for _, p := range f.devs[dev].queue {
		if s == legacyStream || p.stream == s {
			return true
		}
	}
	return false
}

// syncDevice runs everything queued on device dev: cudaDeviceSynchronize's
// part, and that of the calls CUDA documents as synchronising the device.
func (f *Fake) syncDevice(dev int) *failure {
	ds := &f.devs[dev]
	for i := range ds.queue {
		ds.queue[i].due = true
	}
	return f.run(dev)
}

// run runs the due work of dev in issue order and keeps the rest queued.
// Work may synchronise as it runs (a stream's wait for an event drains the
// event's stream), so each piece leaves the queue before it runs and the
// next is looked up afresh.
func (f *Fake) run(dev int) *failure {
	ds := &f.devs[dev]
	for ds.sticky == nil {
		i := slices.IndexFunc(ds.queue, func(p pending) bool { return p.due })
		if i < 0 {
			return nil
		}
		p := ds.queue[i]
		ds.queue = slices.Delete(ds.queue, i, i+1)
		if x := f.execute(ds, p); x != nil && ds.sticky == nil {
			clear(ds.queue)
			ds.queue = ds.queue[:0]
			ds.sticky = x
		}
	}
	return ds.sticky
}

// execute runs p, turning its failure into the sticky fault CUDA reports:
// a kernel's own code where it faulted with one, else
// cudaErrorIllegalAddress.
func (f *Fake) execute(ds *deviceState, p pending) *failure {
	code, why := cudart.Code(0), ""
	if ds.asyncFault != 0 {
		code, why = ds.asyncFault, fmt.Sprintf("injected by FailAsync(%d)", ds.asyncFault)
		ds.asyncFault = 0
	} else if x := p.op(); x != nil {
		code, why = 700, x.why
		if slices.Contains(stickyCodes, x.code) {
			code = x.code
		}
	} else {
		return nil
	}
	return fail(code, "%s queued on stream 0x%x faulted when it ran (%s); the error is sticky until cudaDeviceReset", p.name, uintptr(p.stream), why)
}
