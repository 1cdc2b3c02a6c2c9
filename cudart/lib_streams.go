package cudart

import "github.com/cudapool/cudapool/internal/bytesize"

// StreamCreate is cudaStreamCreate on device.
func (l *Lib) StreamCreate(device int) (Stream, error) {
	if l.unusable() {
		return 0, closedError(CallStreamCreate)
	}
	r := l.call(CallStreamCreate, device)
	if r.code != 0 {
		return 0, l.fail(CallStreamCreate, r, "() on device %d", device)
	}
	l.handles.streamCreated(Stream(r.a))
	return Stream(r.a), nil
}

// StreamSynchronize is cudaStreamSynchronize on device.
func (l *Lib) StreamSynchronize(device int, s Stream) error {
	if l.unusable() {
		return closedError(CallStreamSynchronize)
	}
	if r := l.call(CallStreamSynchronize, device, uintptr(s)); r.code != 0 {
		return l.fail(CallStreamSynchronize, r, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	return nil
}

// StreamDestroy is cudaStreamDestroy on device.
func (l *Lib) StreamDestroy(device int, s Stream) error {
	if l.unusable() {
		return closedError(CallStreamDestroy)
	}
	if x := l.handles.staleStream(s); x != nil {
		return x.err(CallStreamDestroy, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	if r := l.call(CallStreamDestroy, device, uintptr(s)); r.code != 0 {
		return l.fail(CallStreamDestroy, r, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	l.handles.streamDestroyed(s)
	return nil
}

// MemcpyAsync is cudaMemcpyAsync on device and stream s, with the checks of
// Memcpy. Pageable host memory (an ordinary Go slice) is copied before the
// call returns, so only pinned memory is read or written after it: that
// memory must stay allocated, and a registered Go slice alive, until s is
// synchronised.
func (l *Lib) MemcpyAsync(device int, dst, src Mem, kind MemcpyKind, s Stream) error {
	if l.unusable() {
		return closedError(CallMemcpyAsync)
	}
	if dst.n != src.n || dst.n == 0 || !kindFits(dst, src, kind) {
		return checkCopy(CallMemcpyAsync, device, dst, src, kind)
	}
	if r := l.callMem(CallMemcpyAsync, device, [2]Mem{dst, src}, uintptr(dst.n), cint(kind), uintptr(s)); r.code != 0 {
		return l.fail(CallMemcpyAsync, r, "(%s, %s, %s, %s, stream 0x%x) on device %d", dst, src, bytesize.Exact(dst.n), kind, uintptr(s), device)
	}
	return nil
}
