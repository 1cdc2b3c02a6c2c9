package pinned

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/devreset"
)

// span is a range of host memory this package has pinned.
type span struct {
	start, end uintptr
	what       string
	// keep holds the memory so that the garbage collector cannot free a Go
	// slice while CUDA has it pinned, even when the caller drops every other
	// reference without unregistering.
	keep []byte
	// reset sees a reset of the device the range was pinned on, which
	// unpinned it (and freed it, for cudaHostAlloc memory).
	reset devreset.Watch
}

// registry tracks every range the package has pinned, so that an overlap
// is refused with a clear error before CUDA is called. CUDA's pinning is
// process-wide, and so is the registry.
type registry struct {
	mu    sync.Mutex // guards spans
	spans []span     // sorted by start, never overlapping
}

var pinnedRanges registry

// addr is the address of b's first byte; reflection tells it without unsafe.
func addr(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

// claim records b as pinned by what on the device w watches, or returns
// ErrAlreadyRegistered naming the range it overlaps. A range whose device
// was reset since it was pinned is no longer pinned, and gives way. Claim
// before calling CUDA, so that two overlapping calls racing each other
// cannot both reach it.
func (r *registry) claim(b []byte, what string, w devreset.Watch) error {
	start := addr(b)
	end := start + uintptr(len(b))
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].end > start })
		if i == len(r.spans) || r.spans[i].start >= end {
			r.spans = slices.Insert(r.spans, i, span{start: start, end: end, what: what, keep: b, reset: w})
			return nil
		}
		s := r.spans[i]
		if !s.reset.Reset() {
			return fmt.Errorf("%w: %s at 0x%x overlaps %s at 0x%x, %s",
				ErrAlreadyRegistered, bytesize.Format(uint64(len(b))), start, bytesize.Format(uint64(s.end-s.start)), s.start, s.what)
		}
		r.spans = slices.Delete(r.spans, i, i+1)
	}
}

// release forgets the range that starts at b[0]; it reports whether there
// was one.
func (r *registry) release(b []byte) bool {
	return r.drop(b, func(span) bool { return true })
}

// forget is release after the device w watches was reset: the range is
// dropped only if it is still the one pinned under w, since a claim since
// the reset may have taken its place.
func (r *registry) forget(b []byte, w devreset.Watch) {
	r.drop(b, func(s span) bool { return s.reset == w })
}

// drop forgets the range that starts at b[0] when mine says it is the
// caller's, and reports whether it did.
func (r *registry) drop(b []byte, mine func(span) bool) bool {
	start := addr(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := slices.BinarySearchFunc(r.spans, start, func(s span, a uintptr) int {
		switch {
		case s.start < a:
			return -1
		case s.start > a:
			return 1
		}
		return 0
	})
	if ok && mine(r.spans[i]) {
		r.spans = slices.Delete(r.spans, i, i+1)
		return true
	}
	return false
}
