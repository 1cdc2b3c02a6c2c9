package kvcache

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// Swapping moves a preempted sequence's pages to host pages in the pool's
// pinned host arena (WithSwap) and back, by copies queued on the cache's
// stream, as vLLM preempts a sequence group when the device runs out. Only
// the pages the sequence holds alone move: they are what swapping it out
// frees. A page another sequence holds too (a fork's, or a prompt's found
// by prefix) stays on the device, held by both, so that a swap neither
// copies what stays nor stores a shared page twice. The pages moved are
// free on the device (a full one stays cached for prefix reuse), and
// swapping in takes new ones. The cache keeps the sequence's token ids, so
// that swapped in it goes on as before: its full pages are entered in the
// prefix index again.

// SwapOut queues copies of the pages the sequence holds alone (no other
// sequence holds them) to free host pages of the swap space, on the
// cache's stream, and gives those device pages back: a kernel queued after
// on that stream may write them, and the copies read them first. The pages
// it shares with other sequences stay on the device, held by it still, and
// are not copied; so do those it shares only with sequences swapped out
// before it: swapping out every sequence of a shared prompt leaves the
// prompt on the device. The sequence keeps its tokens, but until SwapIn
// Append, Fork, Pages and Tables.Sync refuse it (ErrSwapped), and Free
// frees its host pages and the pages it kept. Stats.SwapOuts counts the
// pages copied, Stats.Swapped the host pages in use.
//
// When a memory tool listens, SwapOut waits for its copies before it gives
// the pages back, so that the tool sees them read pages still held. To the
// tool a swapped-out sequence holds no page, since no kernel may read its
// pages until SwapIn: a page it kept is a region only while a sequence
// not swapped out holds it too.
//
// An error wraps ErrNoSwap (the Cache was made without WithSwap: a mistake
// of configuration, refused whatever the sequence holds), ErrSwapped,
// ErrFreed, ErrInvalidSeq or ErrReleased; or is a *NoPagesError (Op
// "SwapOut", Host set) when the swap space has fewer free host pages than
// the sequence holds alone; or is the runtime's refusal of a copy. It
// changes nothing, but for copies queued into free host pages.
func (s Seq) SwapOut() error {
	st, err := s.useLive("SwapOut")
	if err != nil {
		return err
	}
	c := s.c
	if c.cfg.swap == 0 {
		return fmt.Errorf("%w: SwapOut of %v: the Cache has no host pages to copy its pages to; give New kvcache.WithSwap(n) for a swap space of n pages in the pool's pinned host arena", ErrNoSwap, s)
	}
	k := 0
	for _, id := range st.pages {
		if c.ref[id] == 1 {
			k++
		}
	}
	if k > len(c.swapFree) {
		return &NoPagesError{Op: "SwapOut", Seq: s.ID(), Needed: k, Free: len(c.swapFree), Host: true}
	}
	// The host pages taken, in the order of the pages they hold: the free
	// stack's top k.
	slots := c.swapFree[len(c.swapFree)-k:]
	if err := c.enter("SwapOut", s.id); err != nil {
		return err
	}
	held := true
	defer func() {
		if held {
			c.leave()
		}
	}()
	next := 0
	for _, id := range st.pages {
		if c.ref[id] > 1 {
			continue
		}
		err := c.streams.MemcpyAsync(c.dev, cudart.HostMem(c.swapMem(slots[next])), cudart.DeviceMem(c.PagePtr(id), c.pageBytes), cudart.DeviceToHost, c.cfg.stream)
		if err != nil {
			return fmt.Errorf("kvcache: swap out page %d of %v: %w", id, s, err)
		}
		next++
	}
	if c.annotated {
		if err := c.streams.StreamSynchronize(c.dev, c.cfg.stream); err != nil {
			return fmt.Errorf("kvcache: swap out %v: wait for its copies: %w", s, err)
		}
	}
	st.host = slices.Grow(st.host[:0], len(st.pages))[:len(st.pages)]
	next = 0
	for i, id := range st.pages {
		st.host[i] = none
		if c.ref[id] == 1 {
			st.host[i] = slots[next]
			next++
		}
	}
	pt := c.layout.PageTokens
	// Backwards, as Free gives pages back: a sequence's later pages are
	// evicted before its earlier ones, which more sequences share.
	for i := len(st.pages) - 1; i >= 0; i-- {
		slot := st.host[i]
		if slot == none {
			continue
		}
		copy(c.swapToks[int(slot)*pt:(int(slot)+1)*pt], c.pageTokens(st.pages[i]))
		c.put(st.pages[i])
		st.pages[i] = none
	}
	c.swapFree = c.swapFree[:len(c.swapFree)-k]
	st.swapped = true
	st.epoch++
	c.swapped += k
	c.swapOuts += uint64(k)
	c.publish()
	held = false
	c.leave()
	return c.annotate()
}

// SwapIn brings back a sequence SwapOut moved to the host: it takes device
// pages for the pages moved and queues the copies of their host pages into
// them on the cache's stream, so that kernels queued after on that stream
// read the sequence as it was; the pages it kept on the device it holds
// still. A full page moved whose prefix a device page still holds
// (another sequence's, or one cached since) is not copied: the sequence
// holds that page again, as Append would reuse it, so that a prompt shared
// by many sequences stays stored once through their swaps; Stats.SwapHits
// counts those pages, Stats.SwapIns the pages copied. Its other full pages
// are cached for prefix reuse again, unless a page with the same prefix is.
//
// An error wraps ErrNotSwapped for a sequence not swapped out (its pages
// are on the device: nothing to do), ErrFreed, ErrInvalidSeq or
// ErrReleased; or is a *NoPagesError (Op "SwapIn") when fewer pages are
// free than it needs, which changes nothing; or is the runtime's refusal
// of a copy, which gives back the pages taken.
func (s Seq) SwapIn() error {
	st, err := s.use("SwapIn")
	if err != nil {
		return err
	}
	if !st.swapped {
		return fmt.Errorf("%w: SwapIn of %v, whose pages are on the device; SwapOut comes first", ErrNotSwapped, s)
	}
	c := s.c
	ids, moved, hits := c.resident(st)
	if need, avail := moved-hits, c.available()-c.unheld(ids); need > avail {
		return &NoPagesError{Op: "SwapIn", Seq: s.ID(), Needed: need, Free: avail}
	}
	// The pages found are held first: taking the others must not evict
	// one of them.
	for i, id := range ids {
		if st.host[i] != none && id != none {
			c.hold(id)
		}
	}
	copied := c.copied[:0]
	for i, id := range ids {
		if id == none {
			ids[i], _ = c.take()
			copied = append(copied, i)
		}
	}
	c.copied = copied
	giveBack := func(err error) error {
		for i, id := range ids {
			if st.host[i] != none {
				c.put(id)
			}
		}
		return err
	}
	// The tool must know the pages before the copies write them.
	if err := c.annotate(ids...); err != nil {
		return giveBack(err)
	}
	if err := c.enter("SwapIn", s.id); err != nil {
		return giveBack(err)
	}
	held := true
	defer func() {
		if held {
			c.leave()
		}
	}()
	for _, i := range copied {
		err := c.streams.MemcpyAsync(c.dev, cudart.DeviceMem(c.PagePtr(ids[i]), c.pageBytes), cudart.HostMem(c.swapMem(st.host[i])), cudart.HostToDevice, c.cfg.stream)
		if err != nil {
			return giveBack(fmt.Errorf("kvcache: swap in page %d of %v: %w", i, s, err))
		}
	}
	pt := c.layout.PageTokens
	chain, next := rootHash, 0
	for i, id := range ids {
		full := st.n-i*pt >= pt
		if next < len(copied) && copied[next] == i {
			next++
			slot := st.host[i]
			copy(c.pageTokens(id), c.swapToks[int(slot)*pt:(int(slot)+1)*pt])
			c.fill[id] = int32(min(pt, st.n-i*pt))
			c.filled += uint64(c.fill[id])
			if full {
				h := pageHash(chain, c.pageTokens(id))
				if _, dup := c.index[h]; !dup {
					c.index[h] = id
					c.hashed[id], c.hash[id], c.parent[id] = true, h, chain
				}
			}
		}
		if full {
			chain = pageHash(chain, c.pageTokens(id))
		}
		if slot := st.host[i]; slot != none {
			c.swapFree = append(c.swapFree, slot)
		}
		st.pages[i] = id
	}
	st.swapped = false
	st.epoch++
	c.swapped -= moved
	c.swapIns += uint64(len(copied))
	c.swapHits += uint64(hits)
	c.publish()
	held = false
	c.leave()
	return c.annotate()
}

// resident is, for each page of swapped-out st, the device page that
// holds it: the page it kept, or for a page moved to the host a full device
// page with the same prefix, or none; with the number of pages moved and
// how many of them were found. It changes nothing.
func (c *Cache) resident(st *seqState) (ids []int32, moved, found int) {
	pt := c.layout.PageTokens
	ids = c.scratch[:0]
	chain := rootHash
	for i, slot := range st.host {
		id := st.pages[i]
		var page []int32
		if slot == none {
			page = c.pageTokens(id)
		} else {
			moved++
			page = c.swapToks[int(slot)*pt : (int(slot)+1)*pt]
		}
		if st.n-i*pt >= pt {
			h := pageHash(chain, page)
			if r, ok := c.index[h]; slot != none && ok && c.parent[r] == chain && slices.Equal(c.pageTokens(r), page) {
				id = r
				found++
			}
			chain = h
		}
		ids = append(ids, id)
	}
	c.scratch = ids
	return ids, moved, found
}

// Swapped reports whether the sequence is swapped out: SwapOut has moved
// its pages to the host and SwapIn has not brought them back.
func (s Seq) Swapped() bool {
	st, err := s.state()
	return err == nil && st.swapped
}

// live is the sequence's state, refused with ErrSwapped while it is
// swapped out: its pages are host pages then.
func (s Seq) live() (*seqState, error) {
	st, err := s.state()
	if err == nil && st.swapped {
		return nil, fmt.Errorf("%w: %v", ErrSwapped, s)
	}
	return st, err
}

// swapMem is host page slot of the swap space.
func (c *Cache) swapMem(slot int32) []byte {
	off := uint64(slot) * c.stride
	return c.swapBuf[off : off+c.pageBytes]
}
