package cudarttest

import (
	"slices"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// FakeEventTick is what the fake's EventElapsedTime counts per call: the
// fake has no clock worth measuring, so the time between two events is one
// FakeEventTick for each call made to the fake between the moments they
// completed. It is deterministic, and zero or more when the end event
// completed after the start.
const FakeEventTick = time.Microsecond

// eventState is the fake's live events.
type eventState struct {
	live map[cudart.Event]*event
	next cudart.Event
}

// event is one live event.
type event struct {
	ownedBy
	recorded bool // EventRecord was called
	done     bool // its last record ran
	captured bool // its last record was into a capture
	stream   cudart.Stream
	stamp    int    // f.seq when its record ran
	rec      record // its last record, while queued
	// seen is the latest record an EventQuery of it saw (see poll).
	seen uint64

	in *capture // the capture of its last record, while captured
}

// record is an event's record as queued: the device whose queue holds it,
// its stream and its id there (0 in a capture).
type record struct {
	dev    int
	stream cudart.Stream
	id     uint64
}

// outstanding reports whether r is still queued.
func (f *Fake) outstanding(r record) bool {
	return r.id != 0 && slices.ContainsFunc(f.devs[r.dev].queue, func(p pending) bool { return p.id == r.id })
}

// EventCreate is cudaEventCreate.
func (f *Fake) EventCreate(device int) (cudart.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.EventCreate, device); x != nil {
		return 0, x.err(calls.EventCreate, "() on device %d", device)
	}
	if f.evs.live == nil {
		f.evs.live = make(map[cudart.Event]*event)
		f.evs.next = 0x7_0000
	}
	f.evs.next += 0x10
	f.evs.live[f.evs.next] = &event{ownedBy: ownedBy{device, f.birth()}}
	return f.evs.next, nil
}

// event finds live event e of device.
func (f *Fake) event(e cudart.Event, device int) (*event, *failure) {
	ev := f.evs.live[e]
	if x := onDevice(ev, device, "event 0x%x", uintptr(e)); x != nil {
		return nil, x
	}
	return ev, nil
}

// streamEvent is f.streamCall of c on s, then the live event e of device:
// the device whose queue runs s's work, the event, and the first refusal.
func (f *Fake) streamEvent(c calls.Call, device int, s cudart.Stream, e cudart.Event) (int, *event, *failure) {
	qdev, x := f.streamCall(c, device, s)
	if x != nil {
		return qdev, nil, x
	}
	ev, x := f.event(e, device)
	return qdev, ev, x
}

// EventRecord is cudaEventRecord: e completes when the work issued to s
// before it has run.
func (f *Fake) EventRecord(device int, e cudart.Event, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, ev, x := f.streamEvent(calls.EventRecord, device, s, e)
	if x == nil {
		ev.recorded, ev.done, ev.stream = true, false, s
		ev.in = f.graph.captures[s]
		ev.captured = ev.in != nil
		rec := record{dev: qdev, stream: canonical(s)}
		// A record that runs after the event was recorded again leaves
		// the event as the later record has it.
		rec.id, x = f.enqueueTask(qdev, s, calls.EventRecord, task{op: func() *failure {
			if ev.rec.id == rec.id {
				ev.done, ev.stamp = true, f.seq
			}
			return nil
		}})
		ev.rec = rec
	}
	if x != nil {
		return x.err(calls.EventRecord, "(event 0x%x, stream 0x%x) on device %d", uintptr(e), uintptr(s), device)
	}
	return nil
}

// StreamWaitEvent is cudaStreamWaitEvent: work issued to s after it runs
// once e, as last recorded, has completed. A stream that waits, in its
// capture, for an event it recorded earlier in the same capture waits for
// what its order already puts first: CUDA adds an edge at most, and the
// fake records nothing. Waiting for an event recorded in another capture,
// which joins s to that capture on CUDA, is not modelled: it fails with
// cudaErrorNotSupported.
func (f *Fake) StreamWaitEvent(device int, s cudart.Stream, e cudart.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, ev, x := f.streamEvent(calls.StreamWaitEvent, device, s, e)
	if x == nil && ev.captured && ev.stream == s && ev.in == f.graph.captures[s] {
		return nil
	}
	if x == nil && ev.captured {
		x = fail(801, "event 0x%x was recorded in a capture: the fake does not join other streams into a capture", uintptr(e))
	}
	if x == nil {
		// The wait is for the record before it, not for later work of
		// the event's stream, nor for a later record.
		rec := ev.rec
		_, x = f.enqueueTask(qdev, s, calls.StreamWaitEvent, task{
			op: func() *failure {
				if f.outstanding(rec) {
					return f.runUpTo(rec.dev, rec.stream, rec.id)
				}
				return nil
			},
			ready: func(p *Progress) bool { return !f.outstanding(rec) || p.q.reaches(rec.dev, rec.stream, rec.id) },
		})
	}
	if x != nil {
		return x.err(calls.StreamWaitEvent, "(stream 0x%x, event 0x%x) on device %d", uintptr(s), uintptr(e), device)
	}
	return nil
}

// EventSynchronize is cudaEventSynchronize: the stream e was recorded on is
// drained up to it; nothing for an event never recorded. On an event last
// recorded in a capture it fails with cudaErrorInvalidValue and invalidates
// the capture, as CUDA 13.0 does on an H100; EventQuery and
// EventElapsedTime fail with cudaErrorCapturedEvent.
func (f *Fake) EventSynchronize(device int, e cudart.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, x := live(f, calls.EventSynchronize, device, f.evs.live, e, "event")
	if x == nil && ev.captured {
		x = invalid("event 0x%x was last recorded in a capture, which is now invalidated", uintptr(e))
		if cp := f.graph.captures[ev.stream]; cp != nil {
			cp.invalid = "an event recorded in the capture was synchronised"
		}
	}
	if x == nil && f.outstanding(ev.rec) {
		x = f.drainUpTo(ev.rec.dev, ev.rec.stream, ev.rec.id)
	}
	if x != nil {
		return x.err(calls.EventSynchronize, "(event 0x%x) on device %d", uintptr(e), device)
	}
	return nil
}

// EventQuery is cudaEventQuery: whether e, as last recorded, has completed;
// true for an event never recorded. The work before the record progresses
// as StreamQuery lets a stream's: the first query after a record says not
// done, running nothing; a later one runs the stream up to the record, and
// what that waits for, and says done, unless some of it cannot run yet.
func (f *Fake) EventQuery(device int, e cudart.Event) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, x := live(f, calls.EventQuery, device, f.evs.live, e, "event")
	if x == nil {
		x = ev.hostWait(e)
	}
	if x == nil && f.outstanding(ev.rec) {
		_, x = f.poll(ev.rec.dev, ev.rec.stream, ev.rec.id, &ev.seen)
	}
	if x != nil {
		return false, x.err(calls.EventQuery, "(event 0x%x) on device %d", uintptr(e), device)
	}
	return !ev.recorded || ev.done, nil
}

// EventElapsedTime is cudaEventElapsedTime, counted in FakeEventTick. Both
// events must have been recorded (cudaErrorInvalidResourceHandle) and have
// completed (cudaErrorNotReady).
func (f *Fake) EventElapsedTime(device int, start, end cudart.Event) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, x := live(f, calls.EventElapsedTime, device, f.evs.live, start, "event")
	var b *event
	if x == nil {
		b, x = f.event(end, device)
	}
	switch {
	case x != nil:
	case a.captured || b.captured:
		x = fail(907, "an event was last recorded in a capture")
	case !a.recorded || !b.recorded:
		x = fail(400, "both events must have been recorded")
	case !a.done || !b.done:
		x = fail(600, "both events must have completed")
	}
	if x != nil {
		return 0, x.err(calls.EventElapsedTime, "(event 0x%x, event 0x%x) on device %d", uintptr(start), uintptr(end), device)
	}
	return time.Duration(b.stamp-a.stamp) * FakeEventTick, nil
}

// EventDestroy is cudaEventDestroy.
func (f *Fake) EventDestroy(device int, e cudart.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := destroy(f, calls.EventDestroy, device, f.evs.live, e, "event")
	return err
}

// hostWait refuses the host's query of an event last recorded into a
// capture, which CUDA forbids (cudaErrorCapturedEvent).
func (ev *event) hostWait(e cudart.Event) *failure {
	if ev.captured {
		return fail(907, "event 0x%x was last recorded in a capture", uintptr(e))
	}
	return nil
}
