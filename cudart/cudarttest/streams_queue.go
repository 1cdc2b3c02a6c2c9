package cudarttest

import (
	"fmt"
	"math"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// pending is one piece of asynchronous work queued on a stream.
type pending struct {
	task
	id     uint64        // its place in the fake's issue order, from 1
	stream cudart.Stream // canonical: 0 for the legacy default stream
	name   calls.Call    // the call that queued it
	due    bool          // marked to run by the synchronisation under way
}

// task is work as queued or recorded into a capture: what runs it, and
// what a query asks of it before running it (see query).
type task struct {
	op func() *failure
	// ready reports whether op could run now without failing for want of
	// work not yet queued (a peer's part of a collective); nil for work
	// that can always run.
	ready func(p *Progress) bool
	// keys are the Work.Key of the library work it holds: its own, or a
	// launched graph's.
	keys []any
}

// key is the Work.Key of the one library work t holds, nil for none or
// several.
func (t *task) key() any {
	if len(t.keys) != 1 {
		return nil
	}
	return t.keys[0]
}

// holds reports whether t holds library work of key.
func (t *task) holds(key any) bool { return slices.Contains(t.keys, key) }

// upToAll is an upto of drainUpTo that bounds nothing.
const upToAll = math.MaxUint64

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
	_, x := f.enqueueTask(dev, s, name, task{op: op})
	return x
}

// enqueueTask is enqueue of a task that a query asks more of; it returns
// the id of the work queued, 0 when a capture recorded it.
func (f *Fake) enqueueTask(dev int, s cudart.Stream, name calls.Call, t task) (uint64, *failure) {
	ds := &f.devs[dev]
	if ds.sticky != nil {
		return 0, ds.sticky
	}
	if canonical(s) == legacyStream {
		if x := f.captureBlocksSync(dev, legacyStream); x != nil {
			return 0, x
		}
	}
	if f.graph.record(s, name, t) {
		return 0, nil
	}
	if f.opts.memcheck {
		t.op = f.annot.checkedAsOf(t.op)
	}
	f.issued++
	ds.queue = append(ds.queue, pending{task: t, id: f.issued, stream: canonical(s), name: name})
	return f.issued, nil
}

// drain runs what is queued on stream s of device dev, and the work that
// work waits for: the earlier work of s, the earlier work of the legacy
// default stream and, behind a legacy default stream operation, all earlier
// work. It is cudaStreamSynchronize's part; the first fault stops it, makes
// the error sticky, and drops the rest of dev's queue, as a context that
// faulted runs nothing more. A synchronisation with a capturing stream is
// refused, and invalidates the capture, as in CUDA.
func (f *Fake) drain(dev int, s cudart.Stream) *failure {
	return f.drainUpTo(dev, s, upToAll)
}

// drainUpTo is drain of the work of s up to the work of id upto (an
// event's record), and of what that work waits for: none of the later.
func (f *Fake) drainUpTo(dev int, s cudart.Stream, upto uint64) *failure {
	if x := f.captureBlocksSync(dev, s); x != nil {
		return x
	}
	return f.runUpTo(dev, s, upto)
}

// runUpTo is drainUpTo for the device's own waits (a stream's wait for an
// event, a library's piece for its peers') and for a query that checked
// its stream itself: no host synchronisation, which a capture would
// refuse.
func (f *Fake) runUpTo(dev int, s cudart.Stream, upto uint64) *failure {
	ds := &f.devs[dev]
	f.due(dev, s, upto, func(i int) { ds.queue[i].due = true })
	return f.run(dev)
}

// due calls mark with the index in dev's queue of each piece of work that
// drainUpTo(dev, s, upto) runs itself, latest first.
func (f *Fake) due(dev int, s cudart.Stream, upto uint64, mark func(i int)) {
	q := f.devs[dev].queue
	s = canonical(s)
	last := -1
	for i := range q {
		if q[i].stream == s && q[i].id <= upto {
			last = i
		}
	}
	all := false
	for i := last; i >= 0; i-- {
		if p := &q[i]; all || p.stream == s || p.stream == legacyStream {
			mark(i)
			all = all || p.stream == legacyStream
		}
	}
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
