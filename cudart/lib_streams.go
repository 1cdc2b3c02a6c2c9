package cudart

import "github.com/dustin/go-humanize"

// StreamCreate is cudaStreamCreate on device.
func (l *Lib) StreamCreate(device int) (Stream, error) {
	if l.closed.Load() {
		return 0, closedError("cudaStreamCreate")
	}
	r := l.be.streamCreate(device)
	if r.code != 0 {
		return 0, l.fail(r, "cudaStreamCreate() on device %d", device)
	}
	return Stream(r.a), nil
}

// StreamSynchronize is cudaStreamSynchronize on device.
func (l *Lib) StreamSynchronize(device int, s Stream) error {
	if l.closed.Load() {
		return closedError("cudaStreamSynchronize")
	}
	if r := l.be.streamSynchronize(device, s); r.code != 0 {
		return l.fail(r, "cudaStreamSynchronize(stream 0x%x) on device %d", uintptr(s), device)
	}
	return nil
}

// StreamDestroy is cudaStreamDestroy on device.
func (l *Lib) StreamDestroy(device int, s Stream) error {
	if l.closed.Load() {
		return closedError("cudaStreamDestroy")
	}
	if r := l.be.streamDestroy(device, s); r.code != 0 {
		return l.fail(r, "cudaStreamDestroy(stream 0x%x) on device %d", uintptr(s), device)
	}
	return nil
}

// MemcpyAsync is cudaMemcpyAsync on device and stream s, with the checks of
// Memcpy. Pageable host memory (an ordinary Go slice) is copied before the
// call returns, so only pinned memory is read or written after it: that
// memory must stay allocated, and a registered Go slice alive, until s is
// synchronised.
func (l *Lib) MemcpyAsync(device int, dst, src Mem, kind MemcpyKind, s Stream) error {
	if l.closed.Load() {
		return closedError("cudaMemcpyAsync")
	}
	if dst.n != src.n || dst.n == 0 || !kindFits(dst, src, kind) {
		return checkCopy("cudaMemcpyAsync", device, dst, src, kind)
	}
	if r := l.be.memcpyAsync(device, dst, src, kind, s); r.code != 0 {
		return l.fail(r, "cudaMemcpyAsync(%s, %s, %s, %s, stream 0x%x) on device %d", dst, src, humanize.Bytes(dst.n), kind, uintptr(s), device)
	}
	return nil
}
