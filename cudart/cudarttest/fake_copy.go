package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// Memcpy is cudaMemcpy. Device ends must lie wholly inside one live
// allocation; the kind must match the ends (Default infers it); dst and src
// must have the same length. On failure nothing is written.
func (f *Fake) Memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(cudart.CallMemcpy, device)
	if x == nil {
		x = f.drain(device, 0)
	}
	if x != nil {
		return x.err(cudart.CallMemcpy, "(%s <- %s, %s)", dst, src, kind)
	}
	if x := f.memcpy(device, dst, src, kind); x != nil {
		return x.err(cudart.CallMemcpy, "(%s <- %s, %s)", dst, src, kind)
	}
	return nil
}

// Memset is cudaMemset: n bytes at p, which must lie in one live
// allocation, set to value.
func (f *Fake) Memset(device int, p cudart.DevicePtr, value byte, n uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallMemset, device); x != nil {
		return x.err(cudart.CallMemset, "(%s, 0x%02x, %s)", p, value, bytesize.Format(n))
	}
	if n == 0 {
		return nil
	}
	spans, x := f.resolve(f.scratch[:0], p, n, device)
	f.scratch = spans[:0]
	if x != nil {
		return x.err(cudart.CallMemset, "(%s, 0x%02x, %s)", p, value, bytesize.Format(n))
	}
	fillSpans(spans, value)
	return nil
}

// memcpy checks and performs a copy; the call was entered by the caller.
func (f *Fake) memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind) *failure {
	if dst.Len() != src.Len() {
		return invalid("destination is %s, source %s: lengths must match", bytesize.Format(dst.Len()), bytesize.Format(src.Len()))
	}
	if x := checkKind(dst, src, kind); x != nil {
		return x
	}
	n := src.Len()
	if n == 0 {
		return nil
	}
	switch {
	case dst.IsHost() && src.IsHost():
		copy(dst.Host(), src.Host())
		return nil
	case src.IsHost():
		spans, x := f.resolve(f.scratch[:0], dst.Device(), n, device)
		f.scratch = spans[:0]
		if x != nil {
			return x
		}
		writeSpans(spans, src.Host())
	case dst.IsHost():
		spans, x := f.resolve(f.scratch[:0], src.Device(), n, device)
		f.scratch = spans[:0]
		if x != nil {
			return x
		}
		readSpans(dst.Host(), spans)
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
		copySpans(ds, ss)
	}
	return nil
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
