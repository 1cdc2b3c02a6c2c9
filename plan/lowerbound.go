package plan

import (
	"cmp"
	"slices"

	"github.com/cudapool/cudapool/internal/checked"
)

// LowerBound returns the most bytes alive at any one step: the largest sum,
// over steps, of the footprints of the requests alive at that step. No plan
// can use a smaller arena. It fails, naming the request, with
// ErrInvalidRequest or ErrOverflow.
func LowerBound(reqs []Request) (uint64, error) {
	spans := make([]span, len(reqs))
	for i, r := range reqs {
		s, err := spanOf(r)
		if err != nil {
			return 0, within(err, "request %d", i)
		}
		spans[i] = s
	}
	return peak(spans)
}

// span is a request reduced to what overlap in time and bytes needs.
type span struct {
	first, last int
	size        uint64 // footprint
}

func spanOf(r Request) (span, error) {
	if reason, sentinel := r.flaw(); sentinel != nil {
		return span{}, failf(sentinel, "%s", reason)
	}
	fp, err := r.Footprint()
	return span{first: r.First, last: r.Last, size: fp}, err
}

// peak sweeps the spans' endpoints in step order, so the cost depends on the
// number of spans and never on how many steps they cover. Spans already in
// order (the pool's whole-plan buffers all are) are not copied or sorted.
func peak(spans []span) (uint64, error) {
	starts := spans
	if !sortedByFirst(spans) {
		starts = slices.Clone(spans)
		slices.SortFunc(starts, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	}
	ends := spans
	if !sortedByLast(spans) {
		ends = slices.Clone(spans)
		slices.SortFunc(ends, func(a, b span) int { return cmp.Compare(a.last, b.last) })
	}
	var alive, best uint64
	e := 0
	for _, s := range starts {
		// A span ending at step k and one starting at k share step k, so
		// only spans that ended strictly before this start leave.
		for e < len(ends) && ends[e].last < s.first {
			alive -= ends[e].size
			e++
		}
		var ok bool
		if alive, ok = checked.Add(alive, s.size); !ok {
			return 0, failf(ErrOverflow, "sizes alive at step %d add up past 2^64 B", s.first)
		}
		best = max(best, alive)
	}
	return best, nil
}

func sortedByFirst(spans []span) bool {
	for i := 1; i < len(spans); i++ {
		if spans[i].first < spans[i-1].first {
			return false
		}
	}
	return true
}

func sortedByLast(spans []span) bool {
	for i := 1; i < len(spans); i++ {
		if spans[i].last < spans[i-1].last {
			return false
		}
	}
	return true
}
