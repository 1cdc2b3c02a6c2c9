package pool

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// The patterns guards and released buffers are filled with.
const (
	// GuardCanary fills the guard after every buffer at Satisfy; Check
	// reports any other byte found there.
	GuardCanary byte = 0xCB
	// ReleasedPoison fills every arena at ReleaseAll when guards are on, so
	// that a read of a released buffer sees obvious garbage.
	ReleasedPoison byte = 0xDD
)

// ErrCorrupted is matched (errors.Is) by every *CorruptedError.
var ErrCorrupted = errors.New("pool: guard corrupted")

// ErrNoGuards is returned by Check on a pool created without WithGuards.
var ErrNoGuards = errors.New("pool: no guards; create the pool WithGuards to use Check")

// WithGuards follows every buffer with at least n bytes of guard (n rounded up
// to 256; the alignment padding after a buffer counts as guard too), filled
// with GuardCanary at Satisfy. Check reads the guards back and reports every
// byte that changed, so a write of even one byte past a buffer's size is
// caught with no tool attached; ReleaseAll checks them too, then poisons the
// arenas (ReleasedPoison). The guards cost n bytes a buffer (Stats' Guards)
// and a memset a buffer at Satisfy. 0, the default, means no guards.
//
// Buffers that share bytes (Live) may have their guards over another
// buffer's data: only guard bytes that are no other placed buffer's data are
// filled and checked, since the other buffer may legitimately be written.
func WithGuards(n uint64) Option {
	return option(func(c *config) error {
		g, err := align.Up(n, align.CUDA)
		if err != nil || g > 1<<40 {
			return fmt.Errorf("%w: WithGuards(%d): the guard is at most 1 TiB", ErrInvalidOption, n)
		}
		c.guard = g
		return nil
	})
}

// Corruption is one damaged guard.
type Corruption struct {
	Arena Arena
	Name  string // the buffer's name, or "unnamed request of N B"
	Size  uint64 // the buffer's size
	// Past is how far past the buffer's end the first changed byte is:
	// 0 for the byte right after it.
	Past  uint64
	Found byte // the byte found there instead of GuardCanary
}

// CorruptedError lists every buffer whose guard changed since Satisfy.
type CorruptedError struct {
	Damaged []Corruption
}

// Error names each damaged buffer, where its guard changed and what was
// found.
func (e *CorruptedError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pool: guard corrupted after %d buffer(s)", len(e.Damaged))
	for i, c := range e.Damaged {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&sb, "%s%s %q (%s): byte %d past its end is %#02x, not %#02x", sep, c.Arena, c.Name, bytesize.Exact(c.Size), c.Past, c.Found, GuardCanary)
	}
	return sb.String()
}

// Is makes errors.Is(err, ErrCorrupted) true.
func (e *CorruptedError) Is(target error) bool { return target == ErrCorrupted }

// Check reads back the guard after every placed buffer (a device or managed
// arena through one copy of its used bytes) and returns a *CorruptedError
// naming each buffer whose guard changed, or nil. A pool without guards
// returns ErrNoGuards.
func (p *Pool) Check() error {
	return p.locked(p.checkGuards)
}

// checkGuards is Check with p.mu held.
func (p *Pool) checkGuards() error {
	var found []Corruption
	guarded := false
	for _, l := range p.arenas {
		if l == nil || l.guard == 0 {
			continue
		}
		guarded = true
		if len(l.placed) == 0 {
			continue
		}
		var mem []byte
		if err := p.maintain(l, func() (err error) {
			mem, err = l.read(p)
			return err
		}); err != nil {
			return err
		}
		for _, g := range l.guards(l.placed) {
			for off := g.from; off < g.to; off++ {
				if mem[off] != GuardCanary {
					found = append(found, Corruption{Arena: l.kind, Name: requestName(g.b.name, g.b.size), Size: g.b.size, Past: off - (g.b.offset + g.b.size), Found: mem[off]})
					break
				}
			}
		}
	}
	if !guarded {
		return ErrNoGuards
	}
	if len(found) > 0 {
		return &CorruptedError{Damaged: found}
	}
	return nil
}

// guardRange is the part of b's guard that is no other buffer's data.
type guardRange struct {
	b        *Buffer
	from, to uint64
}

// guards are the checkable guard bytes of bufs: each buffer's padding and
// guard, less what any placed buffer's data covers. A buffer's guard can
// overlap only buffers never alive with it, whose writes are legitimate.
func (l *ledger) guards(bufs []*Buffer) []guardRange {
	c := newCover(l.placed, func(*Buffer) bool { return true })
	var out []guardRange
	for _, b := range bufs {
		c.gaps(b.offset+b.size, b.offset+l.span(b.size), func(from, to uint64) {
			out = append(out, guardRange{b, from, to})
		})
	}
	return out
}

// cover is the data of a set of buffers, as ranges by start.
type cover struct {
	data [][2]uint64
	// reach[i] is the furthest end of data[:i+1]: it never falls, so the
	// first range that can reach a point is found by binary search rather
	// than by walking every range before it.
	reach []uint64
}

// newCover is the data of the buffers of bufs that keep selects.
func newCover(bufs []*Buffer, keep func(*Buffer) bool) cover {
	var c cover
	for _, b := range bufs {
		if keep(b) {
			c.data = append(c.data, [2]uint64{b.offset, b.offset + b.size})
		}
	}
	slices.SortFunc(c.data, func(x, y [2]uint64) int { return cmp.Compare(x[0], y[0]) })
	c.reach = make([]uint64, len(c.data))
	for i, d := range c.data {
		c.reach[i] = d[1]
		if i > 0 {
			c.reach[i] = max(c.reach[i], c.reach[i-1])
		}
	}
	return c
}

// gaps calls fn with each piece of [from, to) that no range covers, in
// order.
func (c cover) gaps(from, to uint64, fn func(from, to uint64)) {
	start, _ := slices.BinarySearch(c.reach, from+1)
	end, _ := slices.BinarySearchFunc(c.data, to, func(d [2]uint64, t uint64) int { return cmp.Compare(d[0], t) })
	cur := from
	for _, d := range c.data[start:max(start, end)] {
		if d[1] <= cur {
			continue
		}
		if d[0] > cur {
			fn(cur, min(d[0], to))
		}
		cur = max(cur, d[1])
		if cur >= to {
			return
		}
	}
	if cur < to {
		fn(cur, to)
	}
}

// fillGuards writes GuardCanary over the checkable guards of the buffers
// Satisfy just placed, the last n of l.placed.
func (l *ledger) fillGuards(p *Pool, n int) error {
	for _, g := range l.guards(l.placed[len(l.placed)-n:]) {
		if err := l.fill(p, g.from, g.to-g.from, GuardCanary); err != nil {
			return fmt.Errorf("pool: fill the guard of %s: %w", g.b.label(), err)
		}
	}
	return nil
}

// fill sets n bytes of the arena from off to v.
func (l *ledger) fill(p *Pool, off, n uint64, v byte) error {
	if h := l.mem.host(); h != nil {
		for i := off; i < off+n; i++ {
			h[i] = v
		}
		return nil
	}
	if err := p.rt.Memset(p.dev, l.mem.device().Add(off), v, n); err != nil {
		return err
	}
	p.queued = true
	return nil
}

// read is the arena's used bytes, copied to the host in one call for
// device memory.
func (l *ledger) read(p *Pool) ([]byte, error) {
	if h := l.mem.host(); h != nil {
		return h[:l.used], nil
	}
	out := make([]byte, l.used)
	if err := p.rt.Memcpy(p.dev, cudart.HostMem(out), cudart.DeviceMem(l.mem.device(), l.used), cudart.DeviceToHost); err != nil {
		return nil, fmt.Errorf("pool: read the %s arena's guards: %w", l.kind, err)
	}
	return out, nil
}

// poison fills the used bytes of every guarded arena with ReleasedPoison.
func (p *Pool) poison() error {
	for _, l := range p.arenas {
		if l != nil && l.guard > 0 && l.used > 0 {
			if err := p.maintain(l, func() error { return l.fill(p, 0, l.used, ReleasedPoison) }); err != nil {
				return fmt.Errorf("pool: poison the released %s arena: %w", l.kind, err)
			}
		}
	}
	return nil
}
