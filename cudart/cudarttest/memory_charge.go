package cudarttest

import (
	"cmp"
	"slices"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// How CUDA charges device memory to cudaMalloc and cudaMallocAsync, as
// examples/charge measured it on an H100 (CUDA 13): cudaMalloc takes memory
// from the device in 2 MiB units. An allocation of up to 2 MiB, rounded up
// to 512 bytes, goes into the first 2 MiB chunk with room for it, and a new
// chunk is taken (2 MiB off the free memory) only when none has room, so a
// thousand 1-byte allocations cost one chunk; a chunk goes back when its
// last allocation is freed. A larger allocation takes its own memory,
// rounded up to 2 MiB. cudaMallocAsync's default pool does the same with
// 32 MiB segments, for allocations of up to 32 MiB (the largest measured
// was 5 MiB); a segment goes back when its last allocation's free has run.
const (
	chunkBytes   = 2 << 20
	segmentBytes = 32 << 20
	chunkAlign   = 512
)

// Only the charge is modelled: each allocation keeps its own address with a
// guard gap after it (place), so that an overrun still lands on nothing.

// chunk is one 2 MiB unit shared by small allocations: the byte ranges of
// the chunk they take, sorted by offset.
type chunk struct {
	used []chunkUse
	free uint64 // bytes of the chunk in no range, maybe not contiguous
}

type chunkUse struct{ off, n uint64 }

// chunkPool is the chunks of one device for one kind of allocation, each
// unit bytes.
type chunkPool struct {
	unit   uint64
	chunks []*chunk
}

// chunkSlot is where a small allocation is charged: its chunk and range.
type chunkSlot struct {
	pool *chunkPool
	c    *chunk
	use  chunkUse
}

// chunked reports whether an allocation of size bytes shares a chunk of
// p, and its size there.
func (p *chunkPool) chunked(size uint64) (uint64, bool) {
	n, err := align.Up(size, chunkAlign)
	return n, err == nil && n <= p.unit
}

// take finds the first room for n bytes in p's chunks, first chunk and
// lowest offset first; opened is true when a new chunk had to be taken,
// which the caller charges.
func (p *chunkPool) take(n uint64) (s chunkSlot, opened bool) {
	for _, c := range p.chunks {
		if c.free < n {
			continue
		}
		if off, ok := c.room(n, p.unit); ok {
			return p.use(c, off, n), false
		}
	}
	c := &chunk{free: p.unit}
	p.chunks = append(p.chunks, c)
	return p.use(c, 0, n), true
}

// room is the lowest offset with n free bytes after it in c, of unit bytes.
func (c *chunk) room(n, unit uint64) (uint64, bool) {
	at := uint64(0)
	for _, u := range c.used {
		if u.off-at >= n {
			return at, true
		}
		at = u.off + u.n
	}
	return at, unit-at >= n
}

func (p *chunkPool) use(c *chunk, off, n uint64) chunkSlot {
	u := chunkUse{off, n}
	i, _ := slices.BinarySearchFunc(c.used, off, func(u chunkUse, off uint64) int {
		return cmp.Compare(u.off, off)
	})
	c.used = slices.Insert(c.used, i, u)
	c.free -= n
	return chunkSlot{pool: p, c: c, use: u}
}

// release gives s's range back, and reports whether its chunk emptied and
// went back to the device, which the caller uncharges (pool.unit bytes).
func (s chunkSlot) release() bool {
	c := s.c
	i := slices.Index(c.used, s.use)
	c.used = slices.Delete(c.used, i, i+1)
	c.free += s.use.n
	if len(c.used) > 0 {
		return false
	}
	s.pool.chunks = slices.DeleteFunc(s.pool.chunks, func(o *chunk) bool { return o == c })
	return true
}

// chargeAlloc charges an allocation of size bytes from pool p of device d:
// a range of a chunk (a new chunk's bytes when none has room), or its own
// 2 MiB granules. It returns the slot to give back, if any, and the bytes
// charged to the region itself.
func (f *Fake) chargeAlloc(d int, p *chunkPool, size uint64) (*chunkSlot, uint64, *failure) {
	if n, ok := p.chunked(size); ok {
		s, opened := p.take(n)
		if opened {
			if x := f.charge(d, p.unit); x != nil {
				s.release()
				return nil, 0, x
			}
		}
		return &s, 0, nil
	}
	charge, err := align.Up(size, chunkBytes)
	if err != nil {
		return nil, 0, fail(2, "asked for %s, more than any device holds", bytesize.Format(size))
	}
	if x := f.charge(d, charge); x != nil {
		return nil, 0, x
	}
	return nil, charge, nil
}
