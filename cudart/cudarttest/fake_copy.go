package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// Memcpy is cudaMemcpy. Device ends must lie wholly inside one live
// allocation; the kind must match the ends (Default infers it); dst and src
// must have the same length; host ends must not overlap, which CUDA leaves
// undefined. On failure nothing is written. A copy from device to device is
// queued on the legacy default stream, as CUDA returns before it is done;
// any other waits for the device's queued work and is done when Memcpy
// returns.
func (f *Fake) Memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.Memcpy, device)
	if x == nil {
		x = f.captureBlocksSync(device, legacyStream)
	}
	if x == nil {
		x = f.memcpy(device, dst, src, kind, false)
	}
	if x == nil && !dst.IsHost() && !src.IsHost() {
		x = f.enqueue(device, legacyStream, calls.Memcpy, func() *failure { return f.memcpy(device, dst, src, kind, true) })
	} else if x == nil {
		if x = f.syncDevice(device); x == nil {
			x = f.memcpy(device, dst, src, kind, true)
		}
	}
	if x != nil {
		return x.err(calls.Memcpy, "(%s <- %s, %s)", dst, src, kind)
	}
	return nil
}

// Memset is cudaMemset: n bytes at p, which must lie in one live
// allocation, set to value. As in CUDA, it is queued on the legacy default
// stream, unless p is mapped host memory or managed memory, which it sets
// after the device's queued work and before it returns.
func (f *Fake) Memset(device int, p cudart.DevicePtr, value byte, n uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.Memset, device)
	if x == nil {
		x = f.memset(device, p, value, n, false)
	}
	if r := f.containing(uint64(p)); x == nil && r != nil && (r.kind == kindHostAlias || r.kind == kindManaged) {
		if x = f.captureBlocksSync(device, legacyStream); x == nil {
			x = f.syncDevice(device)
		}
		if x == nil {
			x = f.memset(device, p, value, n, true)
		}
	} else if x == nil {
		x = f.enqueue(device, legacyStream, calls.Memset, func() *failure { return f.memset(device, p, value, n, true) })
	}
	if x != nil {
		return x.err(calls.Memset, "(%s, 0x%02x, %s)", p, value, bytesize.Exact(n))
	}
	return nil
}

// memset checks a memset and, when perform, does it.
func (f *Fake) memset(device int, p cudart.DevicePtr, value byte, n uint64, perform bool) *failure {
	if n == 0 {
		return nil
	}
	if x := f.memcheck(uint64(p), n, "memset"); x != nil {
		return x
	}
	spans, x := f.resolve(f.scratch[:0], p, n, device)
	f.scratch = spans[:0]
	if x == nil && perform {
		fillSpans(spans, value)
	}
	return x
}

// memcpy checks a copy and, when perform, does it; the call was entered by
// the caller.
func (f *Fake) memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind, perform bool) *failure {
	if dst.Len() != src.Len() {
		return invalid("destination is %s, source %s: lengths must match", bytesize.Exact(dst.Len()), bytesize.Exact(src.Len()))
	}
	if x := checkKind(dst, src, kind); x != nil {
		return x
	}
	n := src.Len()
	if n == 0 {
		return nil
	}
	if x := f.memcheckCopy(dst, src); x != nil {
		return x
	}
	switch {
	case dst.IsHost() && src.IsHost():
		d, s := addrOf(dst.Host()), addrOf(src.Host())
		if d < s+uintptr(n) && s < d+uintptr(n) {
			return invalid("host source and destination overlap, which CUDA leaves undefined")
		}
		if perform {
			copy(dst.Host(), src.Host())
		}
	case src.IsHost():
		spans, x := f.resolve(f.scratch[:0], dst.Device(), n, device)
		f.scratch = spans[:0]
		if x != nil {
			return x
		}
		if perform {
			writeSpans(spans, src.Host())
		}
	case dst.IsHost():
		spans, x := f.resolve(f.scratch[:0], src.Device(), n, device)
		f.scratch = spans[:0]
		if x != nil {
			return x
		}
		if perform {
			readSpans(dst.Host(), spans)
		}
	default:
		d, s := uint64(dst.Device()), uint64(src.Device())
		if d < s+n && s < d+n {
			return invalid("source and destination overlap, which CUDA leaves undefined")
		}
		ds, x := f.resolve(f.scratch[:0], dst.Device(), n, device)
		f.scratch = ds[:0]
		if x != nil {
			return x
		}
		ss, x := f.resolve(f.scratch2[:0], src.Device(), n, device)
		f.scratch2 = ss[:0]
		if x != nil {
			return x
		}
		if perform {
			copySpans(ds, ss)
		}
	}
	return nil
}

// pinned reports whether all of b is pinned host memory (allocated or
// registered), which asynchronous copies read and write in stream order.
func (f *Fake) pinned(b []byte) bool {
	h := f.containingHost(addrOf(b))
	return h != nil && addrOf(b)+uintptr(len(b)) <= h.end()
}

// checkKind rejects a copy kind that contradicts its ends. CUDA leaves such a
// copy undefined; the fake makes it an error.
func checkKind(dst, src cudart.Mem, kind cudart.MemcpyKind) *failure {
	var want cudart.MemcpyKind
	switch {
	case dst.IsHost() && src.IsHost():
		want = cudart.HostToHost
	case src.IsHost():
		want = cudart.HostToDevice
	case dst.IsHost():
		want = cudart.DeviceToHost
	default:
		want = cudart.DeviceToDevice
	}
	if kind == cudart.Default || kind == want {
		return nil
	}
	if kind < cudart.HostToHost || kind > cudart.Default {
		return invalid("unknown copy kind %d", int(kind))
	}
	return invalid("copy from %s to %s is %s, not %s", side(src), side(dst), want, kind)
}

func side(m cudart.Mem) string {
	if m.IsHost() {
		return "host"
	}
	return "device"
}
