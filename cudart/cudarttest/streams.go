package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
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
	if x := f.check(calls.StreamCreate, device); x != nil {
		return 0, x.err(calls.StreamCreate, "(device %d)", device)
	}
	s := f.nextStream
	f.nextStream += streamStride
	f.streams[s] = streamInfo{device: device, seq: f.birth()}
	return s, nil
}

// StreamSynchronize is cudaStreamSynchronize: the work queued on s runs,
// with what it waits for (see the package documentation). A stream of
// another device is that device's, as in CUDA.
func (f *Fake) StreamSynchronize(device int, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.StreamSynchronize, device, s)
	if x == nil {
		x = f.drain(qdev, s)
	}
	if x != nil {
		return x.err(calls.StreamSynchronize, "(0x%x)", uintptr(s))
	}
	return nil
}

// StreamQuery is cudaStreamQuery: whether the work queued on s has
// completed. The work progresses as a GPU's does, without a
// synchronisation: a query that finds work it has not seen before says not
// done, running nothing; a later one runs the work, with what it waits
// for, and says done, unless some of it cannot run yet (a piece of a
// collective whose peers have not queued theirs): then it runs nothing and
// says not done. A program that polls thus always sees cudaErrorNotReady
// once, and the results only after a query said done. The legacy default
// stream is done only when all of its device's work is, since its work
// waits for every stream's. A capturing stream refuses the query and its
// capture is invalidated, as CUDA does.
func (f *Fake) StreamQuery(device int, s cudart.Stream) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.StreamQuery, device, s)
	if x == nil {
		x = f.captureBlocksSync(qdev, s)
	}
	done := false
	if x == nil {
		ds := &f.devs[qdev]
		if ds.seen == nil {
			ds.seen = make(map[cudart.Stream]uint64)
		}
		seen := ds.seen[canonical(s)]
		done, x = f.poll(qdev, s, upToAll, &seen)
		ds.seen[canonical(s)] = seen
	}
	if x != nil {
		return false, x.err(calls.StreamQuery, "(0x%x)", uintptr(s))
	}
	return done, nil
}

// StreamDestroy is cudaStreamDestroy. Destroying a stream twice, or a
// built-in one, fails with cudaErrorInvalidResourceHandle.
func (f *Fake) StreamDestroy(device int, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.StreamDestroy, device); x != nil {
		return x.err(calls.StreamDestroy, "(0x%x)", uintptr(s))
	}
	if _, ok := f.streams[s]; !ok {
		return fail(400, "not a live stream from cudaStreamCreate").err(calls.StreamDestroy, "(0x%x)", uintptr(s))
	}
	delete(f.devs[f.streams[s].device].seen, s)
	delete(f.streams, s)
	return nil
}

// StreamDevice is cudaStreamGetDevice: the device s was made on; device
// itself for the legacy default stream (0), cudaStreamLegacy and
// cudaStreamPerThread, which name the selected device's. A destroyed or
// unknown stream fails with cudaErrorInvalidResourceHandle.
func (f *Fake) StreamDevice(device int, s cudart.Stream) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.StreamGetDevice, device, s)
	if x != nil {
		return 0, x.err(calls.StreamGetDevice, "(0x%x)", uintptr(s))
	}
	return qdev, nil
}

// MemcpyAsync is cudaMemcpyAsync: Memcpy's checks at once, and the copy
// queued on s, as CUDA does with pinned host memory and device memory. With
// pageable host memory CUDA copies at once what it can: a pageable source
// is read before the call returns (and written to the device in stream
// order), and a pageable destination, like any host-to-host copy, is
// written after s's earlier work and before the call returns.
func (f *Fake) MemcpyAsync(device int, dst, src cudart.Mem, kind cudart.MemcpyKind, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.MemcpyAsync, device, s)
	if x == nil {
		x = f.memcpy(device, dst, src, kind, false)
	}
	if x == nil {
		x = f.memcpyAsync(device, qdev, dst, src, kind, s)
	}
	if x != nil {
		return x.err(calls.MemcpyAsync, "(%s <- %s, %s, stream 0x%x)", dst, src, kind, uintptr(s))
	}
	return nil
}

// MemsetAsync is cudaMemsetAsync: n bytes at p set to value when the work
// queued on s before it has run. The bytes are checked at the call and when
// it runs.
func (f *Fake) MemsetAsync(device int, p cudart.DevicePtr, value byte, n uint64, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.MemsetAsync, device, s)
	if x == nil {
		x = f.memset(device, p, value, n, false)
	}
	if x == nil {
		x = f.enqueue(qdev, s, calls.MemsetAsync, func() *failure { return f.memset(device, p, value, n, true) })
	}
	if x != nil {
		return x.err(calls.MemsetAsync, "(%s, 0x%02x, %s, stream 0x%x)", p, value, bytesize.Exact(n), uintptr(s))
	}
	return nil
}

// memcpyAsync does or queues a checked copy on stream s of queue qdev:
// pageable host memory cannot wait for the stream, so CUDA copies it at once.
func (f *Fake) memcpyAsync(device, qdev int, dst, src cudart.Mem, kind cudart.MemcpyKind, s cudart.Stream) *failure {
	if dst.IsHost() && (src.IsHost() || !f.pinned(dst.Host())) {
		if x := f.drain(qdev, s); x != nil {
			return x
		}
		return f.memcpy(device, dst, src, kind, true)
	}
	if src.IsHost() && !f.pinned(src.Host()) {
		src = cudart.HostMem(append([]byte(nil), src.Host()...))
	}
	return f.enqueue(qdev, s, calls.MemcpyAsync, func() *failure { return f.memcpy(device, dst, src, kind, true) })
}

// streamCall enters call c and checks its device, that no sticky error
// poisons it, and the stream; it returns the device whose queue the stream
// is: its own for a created stream, device for the built-in ones.
func (f *Fake) streamCall(c calls.Call, device int, s cudart.Stream) (int, *failure) {
	if x := f.check(c, device); x != nil {
		return 0, x
	}
	return f.streamOf(device, s)
}

// streamOf is the device of s, a stream queued on for device: device for
// the default streams; a stream that is not live, or whose device does not
// work, fails.
func (f *Fake) streamOf(device int, s cudart.Stream) (int, *failure) {
	if s == 0 || s == streamLegacyHandle || s == streamPerThreadHandle {
		return device, nil
	}
	info, ok := f.streams[s]
	if !ok {
		return 0, fail(400, "stream 0x%x is not live", uintptr(s))
	}
	if x := f.broken(info.device); x != nil {
		return 0, x
	}
	return info.device, nil
}
