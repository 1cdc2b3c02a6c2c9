package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// memset checks a memset and, when perform, does it.
func (f *Fake) memset(device int, p cudart.DevicePtr, value byte, n uint64, perform bool) *failure {
	if n == 0 {
		return nil
	}
	if x := f.memcheck(uint64(p), n, "memset"); x != nil {
		return x
	}
	spans, x := f.resolveScratch(p, n, device)
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
		spans, x := f.resolveScratch(dst.Device(), n, device)
		if x == nil && perform {
			writeSpans(spans, src.Host())
		}
		return x
	case dst.IsHost():
		spans, x := f.resolveScratch(src.Device(), n, device)
		if x == nil && perform {
			readSpans(dst.Host(), spans)
		}
		return x
	default:
		d, s := uint64(dst.Device()), uint64(src.Device())
		if d < s+n && s < d+n {
			return invalid("source and destination overlap, which CUDA leaves undefined")
		}
		ds, x := f.resolveScratch(dst.Device(), n, device)
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
