package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
)

// streamInfo is a live stream from StreamCreate.
type streamInfo struct {
	device int
	seq    int
}

// Built-in stream handles every call accepts: the legacy default stream (0),
// cudaStreamLegacy (1) and cudaStreamPerThread (2).
const (
	streamLegacyHandle    cudart.Stream = 1
	streamPerThreadHandle cudart.Stream = 2
	// firstStream is the first handle StreamCreate gives out; handles grow by
	// streamStride and are never reused, so a destroyed stream stays invalid.
	firstStream  cudart.Stream = 0x5_0000
	streamStride cudart.Stream = 0x10
)

// StreamCreate is cudaStreamCreate.
func (f *Fake) StreamCreate(device int) (cudart.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallStreamCreate, device); x != nil {
		return 0, x.err(cudart.CallStreamCreate, "(device %d)", device)
	}
	s := f.nextStream
	f.nextStream += streamStride
	f.streams[s] = streamInfo{device: device, seq: f.seq}
	return s, nil
}

// StreamSynchronize is cudaStreamSynchronize. Work on a stream completes when
// it is issued, so it only checks s.
func (f *Fake) StreamSynchronize(device int, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.streamCall(cudart.CallStreamSynchronize, device, s)
	if x == nil {
		x = f.drain(device, s)
	}
	if x != nil {
		return x.err(cudart.CallStreamSynchronize, "(0x%x)", uintptr(s))
	}
	return nil
}

// StreamDestroy is cudaStreamDestroy. Destroying a stream twice, or a
// built-in one, fails with cudaErrorInvalidResourceHandle.
func (f *Fake) StreamDestroy(device int, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallStreamDestroy, device); x != nil {
		return x.err(cudart.CallStreamDestroy, "(0x%x)", uintptr(s))
	}
	if _, ok := f.streams[s]; !ok {
		return fail(400, "not a live stream from cudaStreamCreate").err(cudart.CallStreamDestroy, "(0x%x)", uintptr(s))
	}
	delete(f.streams, s)
	return nil
}

// MemcpyAsync is cudaMemcpyAsync: Memcpy, checked the same way, on a valid
// stream. It completes before it returns.
func (f *Fake) MemcpyAsync(device int, dst, src cudart.Mem, kind cudart.MemcpyKind, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.streamCall(cudart.CallMemcpyAsync, device, s)
	if x == nil {
		x = f.enqueue(device, s, cudart.CallMemcpyAsync, func() *failure { return f.memcpy(device, dst, src, kind) })
	}
	if x != nil {
		return x.err(cudart.CallMemcpyAsync, "(%s <- %s, %s, stream 0x%x)", dst, src, kind, uintptr(s))
	}
	return nil
}

// streamCall enters call c and checks its device and stream.
func (f *Fake) streamCall(c cudart.Call, device int, s cudart.Stream) *failure {
	if x := f.check(c, device); x != nil {
		return x
	}
	return f.stream(s)
}

func (f *Fake) stream(s cudart.Stream) *failure {
	if s == 0 || s == streamLegacyHandle || s == streamPerThreadHandle {
		return nil
	}
	if _, ok := f.streams[s]; !ok {
		return fail(400, "stream 0x%x is not live", uintptr(s))
	}
	return nil
}
