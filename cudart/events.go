package cudart

import (
	"math"
	"time"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// EventCreate is cudaEventCreate on device: an event with timing enabled.
func (l *library) EventCreate(device int) (Event, error) {
	r := l.call(calls.EventCreate, device)
	if r.code != 0 {
		return 0, l.fail(calls.EventCreate, r, "() on device %d", device)
	}
	return Event(r.a), nil
}

// EventRecord is cudaEventRecord of e on stream s: e completes when the
// work issued to s before it has.
func (l *library) EventRecord(device int, e Event, s Stream) error {
	if r := l.callOn(s, calls.EventRecord, device, uintptr(e), uintptr(s)); r.code != 0 {
		return l.fail(calls.EventRecord, r, "(event 0x%x, stream 0x%x) on device %d", uintptr(e), uintptr(s), device)
	}
	return nil
}

// StreamWaitEvent is cudaStreamWaitEvent: work issued to s after it waits
// until e, as last recorded, completes. The host does not wait.
func (l *library) StreamWaitEvent(device int, s Stream, e Event) error {
	if r := l.callOn(s, calls.StreamWaitEvent, device, uintptr(s), uintptr(e), 0); r.code != 0 {
		return l.fail(calls.StreamWaitEvent, r, "(stream 0x%x, event 0x%x) on device %d", uintptr(s), uintptr(e), device)
	}
	return nil
}

// EventSynchronize is cudaEventSynchronize: the host waits until e, as last
// recorded, completes; at once for an event never recorded.
func (l *library) EventSynchronize(device int, e Event) error {
	return l.onHandle(calls.EventSynchronize, device, uintptr(e), "event")
}

// EventQuery is cudaEventQuery: whether e, as last recorded, has completed
// (true for an event never recorded). cudaErrorNotReady is the answer
// false, not an error.
func (l *library) EventQuery(device int, e Event) (bool, error) {
	return l.query(calls.EventQuery, device, uintptr(e), "event")
}

// EventElapsedTime is cudaEventElapsedTime: the time between two completed
// events, which CUDA measures in milliseconds with a resolution of about
// half a microsecond.
func (l *library) EventElapsedTime(device int, start, end Event) (time.Duration, error) {
	r := l.call(calls.EventElapsedTime, device, uintptr(start), uintptr(end))
	if r.code != 0 {
		return 0, l.fail(calls.EventElapsedTime, r, "(event 0x%x, event 0x%x) on device %d", uintptr(start), uintptr(end), device)
	}
	ms := math.Float32frombits(uint32(r.a))
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// EventDestroy is cudaEventDestroy.
func (l *library) EventDestroy(device int, e Event) error {
	return l.onHandle(calls.EventDestroy, device, uintptr(e), "event")
}
