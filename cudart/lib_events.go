package cudart

import (
	"math"
	"time"
)

// EventCreate is cudaEventCreate on device: an event with timing enabled.
func (l *Lib) EventCreate(device int) (Event, error) {
	if l.unusable() {
		return 0, closedError(CallEventCreate)
	}
	r := l.call(CallEventCreate, device)
	if r.code != 0 {
		return 0, l.fail(CallEventCreate, r, "() on device %d", device)
	}
	return Event(r.a), nil
}

// EventRecord is cudaEventRecord of e on stream s: e completes when the
// work issued to s before it has.
func (l *Lib) EventRecord(device int, e Event, s Stream) error {
	if l.unusable() {
		return closedError(CallEventRecord)
	}
	if x := l.handles.staleStream(s); x != nil {
		return x.err(CallEventRecord, "(event 0x%x, stream 0x%x) on device %d", uintptr(e), uintptr(s), device)
	}
	if r := l.call(CallEventRecord, device, uintptr(e), uintptr(s)); r.code != 0 {
		return l.fail(CallEventRecord, r, "(event 0x%x, stream 0x%x) on device %d", uintptr(e), uintptr(s), device)
	}
	return nil
}

// StreamWaitEvent is cudaStreamWaitEvent: work issued to s after it waits
// until e, as last recorded, completes. The host does not wait.
func (l *Lib) StreamWaitEvent(device int, s Stream, e Event) error {
	if l.unusable() {
		return closedError(CallStreamWaitEvent)
	}
	if x := l.handles.staleStream(s); x != nil {
		return x.err(CallStreamWaitEvent, "(stream 0x%x, event 0x%x) on device %d", uintptr(s), uintptr(e), device)
	}
	if r := l.call(CallStreamWaitEvent, device, uintptr(s), uintptr(e), 0); r.code != 0 {
		return l.fail(CallStreamWaitEvent, r, "(stream 0x%x, event 0x%x) on device %d", uintptr(s), uintptr(e), device)
	}
	return nil
}

// EventSynchronize is cudaEventSynchronize: the host waits until e, as last
// recorded, completes; at once for an event never recorded.
func (l *Lib) EventSynchronize(device int, e Event) error {
	if l.unusable() {
		return closedError(CallEventSynchronize)
	}
	if r := l.call(CallEventSynchronize, device, uintptr(e)); r.code != 0 {
		return l.fail(CallEventSynchronize, r, "(event 0x%x) on device %d", uintptr(e), device)
	}
	return nil
}

// EventQuery is cudaEventQuery: whether e, as last recorded, has completed
// (true for an event never recorded). cudaErrorNotReady is the answer
// false, not an error.
func (l *Lib) EventQuery(device int, e Event) (bool, error) {
	if l.unusable() {
		return false, closedError(CallEventQuery)
	}
	r := l.call(CallEventQuery, device, uintptr(e))
	switch r.code {
	case 0:
		return true, nil
	case ErrNotReady.Code:
		if r.failed == CallEventQuery {
			return false, nil
		}
	}
	return false, l.fail(CallEventQuery, r, "(event 0x%x) on device %d", uintptr(e), device)
}

// EventElapsedTime is cudaEventElapsedTime: the time between two completed
// events, which CUDA measures in milliseconds with a resolution of about
// half a microsecond.
func (l *Lib) EventElapsedTime(device int, start, end Event) (time.Duration, error) {
	if l.unusable() {
		return 0, closedError(CallEventElapsedTime)
	}
	r := l.call(CallEventElapsedTime, device, uintptr(start), uintptr(end))
	if r.code != 0 {
		return 0, l.fail(CallEventElapsedTime, r, "(event 0x%x, event 0x%x) on device %d", uintptr(start), uintptr(end), device)
	}
	ms := math.Float32frombits(uint32(r.a))
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// EventDestroy is cudaEventDestroy.
func (l *Lib) EventDestroy(device int, e Event) error {
	if l.unusable() {
		return closedError(CallEventDestroy)
	}
	if r := l.call(CallEventDestroy, device, uintptr(e)); r.code != 0 {
		return l.fail(CallEventDestroy, r, "(event 0x%x) on device %d", uintptr(e), device)
	}
	return nil
}
