package cudarttest

// chunkSize is the unit in which device bytes are backed: a chunk exists once
// something other than zeros is written into it.
const chunkSize = 64 << 10

// backing is the memory behind a range of the device address space: lazily
// backed device memory, or host bytes that mapped host memory aliases.
// Offsets are relative to the start of the backing.
type backing interface {
	// peek returns the n bytes at off, which lie within one chunk, or nil
	// when they were never written and read as zeros.
	peek(off, n uint64) []byte
	// write copies p to off.
	write(off uint64, p []byte)
	// fill sets n bytes at off to v.
	fill(off, n uint64, v byte)
}

// sparse is device memory backed chunk by chunk on first write, so that a
// large allocation costs only what is written. Chunks are allocated
// lazily too: a small allocation that is never written costs no map.
type sparse struct {
	size   uint64
	chunks map[uint64][]byte
}

// pieceLen is how much of n bytes from off fits before the next chunk
// boundary.
func pieceLen(off, n uint64) uint64 {
	return min(n, chunkSize-off%chunkSize)
}

func (s *sparse) peek(off, n uint64) []byte {
	c := s.chunks[off/chunkSize]
	if c == nil {
		return nil
	}
	o := off % chunkSize
	return c[o : o+n]
}

// chunk returns chunk i, creating it; the last chunk is only as long as the
// memory, so that a small allocation holds no 64 KiB chunk.
func (s *sparse) chunk(i uint64) []byte {
	if c := s.chunks[i]; c != nil {
		return c
	}
	if s.chunks == nil {
		s.chunks = make(map[uint64][]byte)
	}
	c := make([]byte, min(chunkSize, s.size-i*chunkSize))
	s.chunks[i] = c
	return c
}

func (s *sparse) write(off uint64, p []byte) {
	for len(p) > 0 {
		n := pieceLen(off, uint64(len(p)))
		i := off / chunkSize
		if s.chunks[i] != nil || !allZero(p[:n]) {
			copy(s.chunk(i)[off%chunkSize:], p[:n])
		}
		off += n
		p = p[n:]
	}
}

func (s *sparse) fill(off, n uint64, v byte) {
	for n > 0 {
		k := pieceLen(off, n)
		i := off / chunkSize
		switch {
		case v == 0 && s.chunks[i] == nil:
		case v == 0 && off%chunkSize == 0 && k == uint64(len(s.chunks[i])):
			delete(s.chunks, i)
		default:
			o := off % chunkSize
			fillBytes(s.chunk(i)[o:o+k], v)
		}
		off += k
		n -= k
	}
}

// backed is how many bytes of s are held in memory.
func (s *sparse) backed() uint64 {
	var n uint64
	for _, c := range s.chunks {
		n += uint64(len(c))
	}
	return n
}

// hostBytes is host memory seen from the device: mapped pinned memory, or
// registered memory mapped with HostRegisterMapped.
type hostBytes []byte

func (h hostBytes) peek(off, n uint64) []byte  { return h[off : off+n] }
func (h hostBytes) write(off uint64, p []byte) { copy(h[off:], p) }
func (h hostBytes) fill(off, n uint64, v byte) { fillBytes(h[off:off+n], v) }

func allZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

func fillBytes(p []byte, v byte) {
	if v == 0 {
		clear(p)
		return
	}
	for i := range p {
		p[i] = v
	}
}

// span is a piece of a device range that lies in one backing: a copy over
// virtual memory mapped from several handles resolves to several spans.
type span struct {
	b      backing
	off, n uint64
}

// writeSpans copies p into the device range the spans make up.
func writeSpans(dst []span, p []byte) {
	for _, s := range dst {
		s.b.write(s.off, p[:s.n])
		p = p[s.n:]
	}
}

// readSpans copies the device range the spans make up into p.
func readSpans(p []byte, src []span) {
	for _, s := range src {
		off, n := s.off, s.n
		for n > 0 {
			k := pieceLen(off, n)
			if v := s.b.peek(off, k); v != nil {
				copy(p, v)
			} else {
				clear(p[:k])
			}
			p = p[k:]
			off += k
			n -= k
		}
	}
}

func fillSpans(dst []span, v byte) {
	for _, s := range dst {
		s.b.fill(s.off, s.n, v)
	}
}

// copySpans copies between two device ranges of equal length. Chunks never
// written in the source stay unbacked in the destination where they can.
func copySpans(dst, src []span) {
	for len(dst) > 0 && len(src) > 0 {
		d, s := &dst[0], &src[0]
		n := pieceLen(s.off, min(d.n, s.n))
		if v := s.b.peek(s.off, n); v != nil {
			d.b.write(d.off, v)
		} else {
			d.b.fill(d.off, n, 0)
		}
		d.off, d.n = d.off+n, d.n-n
		s.off, s.n = s.off+n, s.n-n
		if d.n == 0 {
			dst = dst[1:]
		}
		if s.n == 0 {
			src = src[1:]
		}
	}
}
