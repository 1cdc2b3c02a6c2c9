package kvcache

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart"
)

// The cache tells memory tools which pages are in use when one listens
// (cudart.Annotations: compute-sanitizer through NVTX, or the fake
// WithMemcheck). The page buffer is requested with pool.SubAllocated, so the
// pool registers no region for it; the cache registers each page a sequence
// holds as a region named after the page and its sequences, after every
// change. A kernel or copy that touches a page no sequence holds (freed
// since, or never taken) is then reported as an access to unallocated
// memory, naming the page and the sequence that held it last. With no tool
// listening none of this runs.

// toolListens reports whether rt has a memory tool listening on device.
func toolListens(rt cudart.Runtime, device int) bool {
	a, ok := rt.(cudart.Annotations)
	return ok && a.AnnotationsEnabled(device)
}

// Scope narrows what the memory tool is told to the pages of batch, the
// sequences the kernels queued next work for, until the next Scope: a
// kernel that reads a page its batch does not hold (a stale page table, a
// page of a sequence outside the batch) is then reported, naming the page
// and the sequence that holds it. Scope with no sequence widens it again to
// every page held. The copies the cache queues itself are always allowed.
// Freed and swapped-out sequences in batch hold nothing. With no tool
// listening Scope does nothing, but for refusing a Cache whose pages the
// pool took back (ErrReleased). Any other error is the tool's refusal.
func (c *Cache) Scope(batch ...Seq) error {
	if err := c.alive("Scope", -1); err != nil {
		return err
	}
	if !c.annotated {
		return nil
	}
	c.scope = append(c.scope[:0], batch...)
	c.scoped = len(batch) > 0
	return c.annotate()
}

// annotate registers the pages in use as the regions of the page buffer:
// those of the sequences in scope, and extra, pages a copy of the cache's
// own is about to touch.
func (c *Cache) annotate(extra ...int32) error {
	if !c.annotated {
		return nil
	}
	holders := make(map[int32][]int32)
	add := func(id int32, st *seqState) {
		if st.swapped {
			return
		}
		for _, p := range st.pages {
			holders[p] = append(holders[p], id)
		}
	}
	if c.scoped {
		for _, s := range c.scope {
			if s.c == c {
				if st, err := s.state(); err == nil {
					add(s.id, st)
				}
			}
		}
	} else {
		for id := range c.seqs {
			if st := &c.seqs[id]; st.live {
				add(int32(id), st)
			}
		}
	}
	for _, p := range extra {
		if _, ok := holders[p]; !ok {
			holders[p] = nil
		}
	}
	regions := make([]cudart.MemRegion, 0, len(holders))
	for p, seqs := range holders {
		regions = append(regions, cudart.MemRegion{Addr: c.PagePtr(p), Size: c.pageBytes, Name: pageName(p, seqs)})
	}
	slices.SortFunc(regions, func(a, b cudart.MemRegion) int { return cmp.Compare(a.Addr, b.Addr) })
	if err := c.buf.Annotate(regions); err != nil {
		if c.buf.Placed() != nil {
			// Released from another goroutine since the call's check: the
			// pool dropped the buffer's annotations with it, and a copy
			// that was to follow is refused by enter.
			return nil
		}
		return fmt.Errorf("kvcache: annotate %d page(s): %w", len(regions), err)
	}
	return nil
}

// pageName is what a tool calls page id, held by seqs.
func pageName(id int32, seqs []int32) string {
	switch len(seqs) {
	case 0:
		return fmt.Sprintf("kvcache page %d (being copied)", id)
	case 1:
		return fmt.Sprintf("kvcache page %d (seq %d)", id, seqs[0])
	}
	ids := make([]string, len(seqs))
	for i, s := range seqs {
		ids[i] = fmt.Sprint(s)
	}
	return fmt.Sprintf("kvcache page %d (seqs %s)", id, strings.Join(ids, ", "))
}
