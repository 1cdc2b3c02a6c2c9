package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
)

// check is Validate for the layout res that Plan found for reqs around
// placed, before Plan returns it: every new item aligned and ending below
// 2^64, the arena the highest end, and no new item sharing a byte with a
// buffer alive at a common step. Placed buffers are trusted among
// themselves, as Plan's documentation says, but an overlap of two that the
// check meets is reported as the caller's (ErrOverlap); anything else is a
// defect of the planner (ErrInternal).
//
// The check is its own code, not the planner's: it sweeps the steps,
// keeping the buffers alive sorted by offset. A few new items are compared
// with every placed buffer in turn; with many, placed buffers alive over
// every new item's steps stay out of the sweep, and each new item is
// compared with all of them at once, by bytes.
func (p *problem) check(reqs []Request, placed []Placed, res *Result) error {
	n := len(p.items)
	top := p.fixedTop
	lo, hi := math.MaxInt, 0
	for i, it := range p.items {
		o := res.Offsets[i]
		end, ok := checked.Add(o, it.size)
		if !ok || !align.Is(o, it.align) {
			return failf(ErrInternal, "the layout found puts request %d (%s) at offset %d, unaligned to %d or ending past 2^64",
				i, reqs[i], o, it.align)
		}
		top = max(top, end)
		lo, hi = min(lo, it.first), max(hi, it.last)
	}
	if top != res.ArenaBytes {
		return failf(ErrInternal, "the layout found ends at %d B, not at its arena's %d B", top, res.ArenaBytes)
	}
	name := func(k int) string {
		if k < n {
			return fmt.Sprintf("request %d (%s)", k, reqs[k])
		}
		return fmt.Sprintf("placed buffer %d (%s)", k-n, placed[k-n].Request)
	}
	overlap := func(a, b int, offA, offB uint64) error {
		if a > b {
			a, b, offA, offB = b, a, offB, offA
		}
		if a >= n {
			return failf(ErrOverlap, "%s at offset %d and %s at offset %d share bytes", name(a), offA, name(b), offB)
		}
		return fmt.Errorf("%w: the layout found puts %s at offset %d and %s at offset %d on common bytes: %w",
			ErrInternal, name(a), offA, name(b), offB, ErrOverlap)
	}
	if int64(n)*int64(len(p.fixed)) <= pairwiseChecks {
		// Few enough pairs to compare each new item with each placed
		// buffer, without allocating: the pool's common case, a few new
		// buffers among thousands.
		for f, s := range p.fixed {
			for i, it := range p.items {
				o := res.Offsets[i]
				if s.first <= it.last && it.first <= s.last && p.fixedOff[f] < o+it.size && o < p.fixedOff[f]+s.size {
					return overlap(i, n+f, o, p.fixedOff[f])
				}
			}
		}
		return sweepOverlaps(p.all[:n], res.Offsets, func(a, b int) error { return overlap(a, b, res.Offsets[a], res.Offsets[b]) })
	}
	// who maps the sweep's spans to indices of p.all.
	spans, offs, who := slices.Clone(p.all[:n]), slices.Clone(res.Offsets), make([]int, n, n+len(p.fixed))
	for i := range who {
		who[i] = i
	}
	var whole []placedBytes
	for f, s := range p.fixed {
		switch {
		case s.first <= lo && s.last >= hi:
			whole = append(whole, placedBytes{p.fixedOff[f], p.fixedOff[f] + s.size, n + f})
		case s.first <= hi && s.last >= lo:
			spans, offs, who = append(spans, s), append(offs, p.fixedOff[f]), append(who, n+f)
		}
	}
	if err := checkAgainstWhole(spans[:n], offs[:n], whole, func(i int, w placedBytes) error {
		return overlap(i, w.who, offs[i], w.lo)
	}); err != nil {
		return err
	}
	return sweepOverlaps(spans, offs, func(a, b int) error { return overlap(who[a], who[b], offs[a], offs[b]) })
}

// pairwiseChecks is the number of pairs of a new item and a placed buffer
// up to which check compares every pair rather than sweep.
const pairwiseChecks = 1 << 16

// placedBytes is a placed buffer's bytes and its index in the problem.
type placedBytes struct {
	lo, hi uint64
	who    int
}

// checkAgainstWhole reports, through report, a new item that shares a
// byte with one of the whole-plan buffers. With those sorted by their
// first byte, an item [a, b) meets one exactly when, among those starting
// below b, the highest end is above a; the highest ends are kept as
// prefix maxima, so that the whole-plan buffers need not be disjoint.
func checkAgainstWhole(items []span, off []uint64, whole []placedBytes, report func(int, placedBytes) error) error {
	if len(whole) == 0 {
		return nil
	}
	byLo := func(a, b placedBytes) int { return cmp.Compare(a.lo, b.lo) }
	if !slices.IsSortedFunc(whole, byLo) {
		slices.SortFunc(whole, byLo)
	}
	// highest[k] is the index, in whole, of the highest end among whole[:k+1].
	highest := make([]int32, len(whole))
	for k := range whole {
		if k > 0 && whole[highest[k-1]].hi >= whole[k].hi {
			highest[k] = highest[k-1]
		} else {
			highest[k] = int32(k)
		}
	}
	for i, s := range items {
		a, b := off[i], off[i]+s.size
		k := sort.Search(len(whole), func(k int) bool { return whole[k].lo >= b }) - 1
		if k >= 0 && whole[highest[k]].hi > a {
			return report(i, whole[highest[k]])
		}
	}
	return nil
}
