package cudart

import (
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// StreamCreate is cudaStreamCreate on device.
func (l *library) StreamCreate(device int) (Stream, error) {
	r := l.call(calls.StreamCreate, device)
	if r.code != 0 {
		return 0, l.fail(calls.StreamCreate, r, "() on device %d", device)
	}
	l.registry.streamCreated(Stream(r.a), device)
	return Stream(r.a), nil
}

// StreamSynchronize is cudaStreamSynchronize on device.
func (l *library) StreamSynchronize(device int, s Stream) error {
	return l.onHandle(calls.StreamSynchronize, device, uintptr(s), "stream")
}

// StreamQuery is cudaStreamQuery: whether all the work queued on s has
// completed, without waiting. cudaErrorNotReady is the answer false, not an
// error; a stream that captures refuses the query and its capture is
// invalidated, as with StreamSynchronize.
func (l *library) StreamQuery(device int, s Stream) (bool, error) {
	return l.query(calls.StreamQuery, device, uintptr(s), "stream")
}

// query makes c, cudaEventQuery or cudaStreamQuery, about the handle of
// the kind named what: cudaSuccess is done, cudaErrorNotReady from the
// query itself (not from selecting the device) is not done yet.
func (l *library) query(c calls.Call, device int, handle uintptr, what string) (bool, error) {
	if l.unusable() {
		return false, closedError(c)
	}
	r := l.call(c, device, handle)
	switch r.code {
	case 0:
		return true, nil
	case ErrNotReady.Code:
		if r.failed == c {
			return false, nil
		}
	}
	return false, l.fail(c, r, "(%s 0x%x) on device %d", what, handle, device)
}

// onHandle makes c, a call whose one argument is a handle of the kind
// named what ("event", "stream"), on device, and fails as query does.
func (l *library) onHandle(c calls.Call, device int, handle uintptr, what string) error {
	if r := l.call(c, device, handle); r.code != 0 {
		return l.fail(c, r, "(%s 0x%x) on device %d", what, handle, device)
	}
	return nil
}

// StreamDestroy is cudaStreamDestroy on device.
func (l *library) StreamDestroy(device int, s Stream) error {
	if r := l.callOn(s, calls.StreamDestroy, device, uintptr(s)); r.code != 0 {
		return l.fail(calls.StreamDestroy, r, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	l.registry.streamDestroyed(s)
	return nil
}

// The special stream handles: cudaStreamLegacy and cudaStreamPerThread,
// which, like the legacy default stream 0, name a stream of whichever device
// is current.
const (
	streamLegacy    Stream = 1
	streamPerThread Stream = 2
)

// StreamDevice is cudaStreamGetDevice with device selected: the device s
// belongs to; device itself for the legacy default stream (0),
// cudaStreamLegacy and cudaStreamPerThread, which name the current device's.
// Where the runtime lacks the call (before CUDA 12.8), it answers for those
// and for the streams StreamCreate made, and a stream made elsewhere is an
// error matching ErrNotSupported: its device is unknowable then.
func (l *library) StreamDevice(device int, s Stream) (int, error) {
	if l.unusable() {
		return 0, closedError(calls.StreamGetDevice)
	}
	if x := l.registry.staleStream(s); x != nil {
		return 0, x.err(calls.StreamGetDevice, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	if l.noStreamGetDevice {
		if s == 0 || s == streamLegacy || s == streamPerThread {
			return device, nil
		}
		if d, ok := l.registry.streamDevice(s); ok {
			return d, nil
		}
		return 0, refused(calls.StreamGetDevice, ErrNotSupported, "the CUDA runtime, older than 12.8, lacks it, and StreamCreate did not make the stream", "(stream 0x%x) on device %d", uintptr(s), device)
	}
	r := l.call(calls.StreamGetDevice, device, uintptr(s))
	if r.code != 0 {
		return 0, l.fail(calls.StreamGetDevice, r, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	return int(int32(r.a)), nil
}

// MemcpyAsync is cudaMemcpyAsync on device and stream s, with the checks of
// Memcpy. Pageable host memory (an ordinary Go slice) is copied before the
// call returns, so only pinned memory is read or written after it: that
// memory must stay allocated, and a registered Go slice alive, until s is
// synchronised.
func (l *library) MemcpyAsync(device int, dst, src Mem, kind MemcpyKind, s Stream) error {
	if l.unusable() {
		return closedError(calls.MemcpyAsync)
	}
	if dst.n != src.n || dst.n == 0 || !kindFits(dst, src, kind) {
		return checkCopy(calls.MemcpyAsync, device, dst, src, kind)
	}
	if r := l.callMem(calls.MemcpyAsync, device, [2]Mem{dst, src}, uintptr(dst.n), cint(kind), uintptr(s)); r.code != 0 {
		return l.fail(calls.MemcpyAsync, r, "(%s, %s, %s, %s, stream 0x%x) on device %d", dst, src, bytesize.Exact(dst.n), kind, uintptr(s), device)
	}
	return nil
}

// MemsetAsync is cudaMemsetAsync: n bytes at p set to value, in order on
// stream s of device.
func (l *library) MemsetAsync(device int, p DevicePtr, value byte, n uint64, s Stream) error {
	if r := l.callOn(s, calls.MemsetAsync, device, uintptr(p), uintptr(value), uintptr(n), uintptr(s)); r.code != 0 {
		return l.fail(calls.MemsetAsync, r, "(%s, %d, %s, stream 0x%x) on device %d", p, value, bytesize.Exact(n), uintptr(s), device)
	}
	return nil
}
