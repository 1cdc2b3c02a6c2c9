package plan

import (
	"cmp"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
)

// Validate checks that offsets is a plan for reqs: one offset per request,
// each a multiple of the request's alignment, and no two requests alive at a
// common step sharing a byte. An overlap is reported, wrapping ErrOverlap,
// with both requests' indices; a request that cannot be planned wraps
// ErrInvalidRequest or ErrOverflow.
func Validate(reqs []Request, offsets []uint64) error {
	if len(offsets) != len(reqs) {
		return failf(ErrInvalidRequest, "%d offsets for %d requests", len(offsets), len(reqs))
	}
	spans := make([]span, len(reqs))
	for i, r := range reqs {
		s, err := spanOf(r)
		if err != nil {
			return within(err, "request %d (%s)", i, r)
		}
		if !align.Is(offsets[i], r.alignment()) {
			return failf(ErrInvalidRequest, "request %d (%s): offset %d is not a multiple of %d",
				i, r, offsets[i], r.alignment())
		}
		if _, ok := checked.Add(offsets[i], s.size); !ok {
			return failf(ErrOverflow, "request %d (%s): offset %d + size", i, r, offsets[i])
		}
		spans[i] = s
	}
	return sweepOverlaps(spans, offsets, func(a, b int) error {
		if a > b {
			a, b = b, a
		}
		return failf(ErrOverlap, "request %d (%s) at offset %d and request %d (%s) at offset %d share bytes",
			a, reqs[a], offsets[a], b, reqs[b], offsets[b])
	})
}

// sweepOverlaps visits the spans in step order keeping those alive sorted by
// offset. Spans alive together must be disjoint, so a new one need only be
// compared with its neighbours in that order; the first overlap found is
// passed to report.
func sweepOverlaps(spans []span, off []uint64, report func(a, b int) error) error {
	starts := make([]int, len(spans))
	for i := range starts {
		starts[i] = i
	}
	ends := slices.Clone(starts)
	slices.SortFunc(starts, func(a, b int) int { return cmp.Or(cmp.Compare(spans[a].first, spans[b].first), cmp.Compare(a, b)) })
	slices.SortFunc(ends, func(a, b int) int { return cmp.Or(cmp.Compare(spans[a].last, spans[b].last), cmp.Compare(a, b)) })
	var alive []int
	at := func(o uint64) int { return sort.Search(len(alive), func(k int) bool { return off[alive[k]] >= o }) }
	e := 0
	for _, i := range starts {
		for ; e < len(ends) && spans[ends[e]].last < spans[i].first; e++ {
			k := at(off[ends[e]])
			alive = slices.Delete(alive, k, k+1)
		}
		k := at(off[i])
		if k > 0 {
			if j := alive[k-1]; off[j]+spans[j].size > off[i] {
				return report(j, i)
			}
		}
		if k < len(alive) {
			if j := alive[k]; off[i]+spans[i].size > off[j] {
				return report(j, i)
			}
		}
		alive = slices.Insert(alive, k, i)
	}
	return nil
}
