package kvcache

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// Swapping moves a preempted sequence's pages to host pages in the pool's
// pinned host arena (WithSwap) and back, by copies queued on the cache's
// stream, as vLLM preempts a sequence group when the device runs out. A
// swapped-out sequence holds no device page: its pages are free (a full
// one stays cached for prefix reuse), and swapping in takes new ones. The
// cache keeps the sequence's token ids, so that swapped in it goes on as
// before: its full pages are entered in the prefix index again.

// SwapOut queues copies of the sequence's pages to free host pages of the
// swap space, on the cache's stream, and gives the device pages back: a
// kernel queued after on that stream may write them, and the copies read
// them first. The sequence keeps its tokens but holds no device page until
// SwapIn; Append, Fork, Pages and Tables.Sync refuse it (ErrSwapped) and
// Free frees its host pages.
//
// When a memory tool listens, SwapOut waits for its copies before it gives
// the pages back, so that the tool sees them read pages still held.
//
// An error wraps ErrSwapped, ErrFreed or ErrInvalidSeq; or is a
// *NoPagesError (Op "SwapOut", Host set) when the swap space has fewer free
// host pages than the sequence holds; or is the runtime's refusal of a
// copy. It changes nothing, but for copies queued into free host pages.
func (s Seq) SwapOut() error {
	st, err := s.live()
	if err != nil {
		return err
	}
	c, k := s.c, len(st.pages)
	if k > len(c.swapFree) {
		return &NoPagesError{Op: "SwapOut", Seq: s.ID(), Needed: k, Free: len(c.swapFree), Host: true}
	}
	slots := c.swapFree[len(c.swapFree)-k:]
	for i, id := range st.pages {
		err := c.streams.MemcpyAsync(c.dev, cudart.HostMem(c.swapMem(slots[i])), cudart.DeviceMem(c.PagePtr(id), c.pageBytes), cudart.DeviceToHost, c.cfg.stream)
		if err != nil {
			return fmt.Errorf("kvcache: swap out page %d of %v: %w", id, s, err)
		}
	}
	if c.annotated {
		if err := c.streams.StreamSynchronize(c.dev, c.cfg.stream); err != nil {
			return fmt.Errorf("kvcache: swap out %v: wait for its copies: %w", s, err)
		}
	}
	pt := c.layout.PageTokens
	for i := k - 1; i >= 0; i-- {
		id, slot := st.pages[i], slots[i]
		copy(c.swapToks[int(slot)*pt:(int(slot)+1)*pt], c.pageTokens(id))
		c.put(id)
		st.pages[i] = slot
	}
	c.swapFree = c.swapFree[:len(c.swapFree)-k]
	st.swapped = true
	st.epoch++
	c.swapped += k
	c.swapOuts += uint64(k)
	c.publish()
	return c.annotate()
}

// SwapIn takes device pages for a sequence SwapOut moved to the host and
// queues the copies of its host pages into them on the cache's stream:
// kernels queued after on that stream read the sequence as it was. A full
// page whose prefix a device page still holds (another sequence's, or one
// cached since) is not copied: the sequence holds that page again, as
// Append would reuse it, so that a prompt shared by many sequences stays
// stored once through their swaps. Its other full pages are cached for
// prefix reuse again, unless a page with the same prefix is.
//
// An error wraps ErrFreed or ErrInvalidSeq, or ErrSwapped for a sequence
// not swapped out; or is a *NoPagesError (Op "SwapIn") when fewer pages
// are free than it needs, which changes nothing; or is the runtime's
// refusal of a copy, which gives back the pages taken.
func (s Seq) SwapIn() error {
	st, err := s.state()
	if err != nil {
		return err
	}
	if !st.swapped {
		return fmt.Errorf("%w: SwapIn of %v, which is not swapped out", ErrSwapped, s)
	}
	c := s.c
	ids, hits := c.resident(st)
	if need, avail := len(ids)-hits, c.available()-c.unheld(ids); need > avail {
		return &NoPagesError{Op: "SwapIn", Seq: s.ID(), Needed: need, Free: avail}
	}
	// The pages found are held first: taking the others must not evict
	// one of them.
	for _, id := range ids {
		if id != none {
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
		for _, id := range ids {
			c.put(id)
		}
		return err
	}
	// The tool must know the pages before the copies write them.
	if err := c.annotate(ids...); err != nil {
		return giveBack(err)
	}
	for _, i := range copied {
		err := c.streams.MemcpyAsync(c.dev, cudart.DeviceMem(c.PagePtr(ids[i]), c.pageBytes), cudart.HostMem(c.swapMem(st.pages[i])), cudart.HostToDevice, c.cfg.stream)
		if err != nil {
			return giveBack(fmt.Errorf("kvcache: swap in page %d of %v: %w", i, s, err))
		}
	}
	pt := c.layout.PageTokens
	chain, next := rootHash, 0
	for i, slot := range st.pages {
		id := ids[i]
		if next == len(copied) || copied[next] != i {
			chain = c.hash[id] // found by it
		} else {
			next++
			copy(c.pageTokens(id), c.swapToks[int(slot)*pt:(int(slot)+1)*pt])
			c.fill[id] = int32(min(pt, st.n-i*pt))
			c.filled += uint64(c.fill[id])
			if c.fill[id] == int32(pt) {
				h := pageHash(chain, c.pageTokens(id))
				if _, dup := c.index[h]; !dup {
					c.index[h] = id
					c.hashed[id], c.hash[id], c.parent[id] = true, h, chain
				}
				chain = h
			}
		}
		c.swapFree = append(c.swapFree, slot)
		st.pages[i] = id
	}
	st.swapped = false
	st.epoch++
	c.swapped -= len(ids)
	c.swapIns += uint64(len(copied))
	c.swapHits += uint64(len(ids) - len(copied))
	c.publish()
	return c.annotate()
}

// resident is, for each page of swapped-out st, the device page that holds
// the same prefix (full pages only), or none, and how many were found. It
// changes nothing.
func (c *Cache) resident(st *seqState) (ids []int32, found int) {
	pt := c.layout.PageTokens
	ids = c.scratch[:0]
	chain := rootHash
	for i, slot := range st.pages {
		id := none
		if st.n-i*pt >= pt {
			page := c.swapToks[int(slot)*pt : (int(slot)+1)*pt]
			h := pageHash(chain, page)
			if r, ok := c.index[h]; ok && c.parent[r] == chain && slices.Equal(c.pageTokens(r), page) {
				id = r
				found++
			}
			chain = h
		}
		ids = append(ids, id)
	}
	c.scratch = ids
	return ids, found
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
