package kvcache

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// Seq is a handle to one sequence of a Cache: the tokens it holds and the
// pages they are in. The zero Seq is no sequence. A Seq is a small value,
// compared with ==; after Free, every copy of it is refused with ErrFreed.
type Seq struct {
	c   *Cache
	id  int32
	gen uint32
}

type seqState struct {
	gen     uint32 // the generation its live handles carry
	live    bool
	n       int     // tokens held
	pages   []int32 // page ids, in token order; while swapped, none where host holds the page
	chain   uint64  // prefix hash of the last full page, rootHash when none
	swapped bool    // SwapOut moved the pages it held alone to host (swap.go)
	host    []int32 // while swapped, the host page of the swap space holding each page, none for those kept on the device
	epoch   uint32  // counts the rewrites of pages[:len(pages)] in place (copy-on-write), which page tables copy again
}

// Create starts an empty sequence. After the pool took the pages back (its
// ReleaseAll or Close), it starts none: it returns a handle every method
// refuses with ErrReleased, and changes nothing.
func (c *Cache) Create() Seq {
	if c.alive("Create", -1) != nil {
		return Seq{c: c, id: none}
	}
	var id int32
	if k := len(c.freeSeqs); k > 0 {
		id = c.freeSeqs[k-1]
		c.freeSeqs = c.freeSeqs[:k-1]
	} else {
		c.seqs = append(c.seqs, seqState{})
		id = int32(len(c.seqs) - 1)
	}
	st := &c.seqs[id]
	st.live, st.n, st.pages, st.chain = true, 0, st.pages[:0], rootHash
	c.publish()
	return Seq{c: c, id: id, gen: st.gen}
}

// ID is the sequence's number, unique among its Cache's live sequences (a
// freed sequence's number is given again); -1 for the zero Seq.
func (s Seq) ID() int {
	if s.c == nil {
		return -1
	}
	return int(s.id)
}

// String names the sequence in messages.
func (s Seq) String() string { return fmt.Sprintf("seq %d", s.ID()) }

// use is the sequence's state for call what, refused for a bad handle or
// once the pool took the pages back (ErrReleased).
func (s Seq) use(what string) (*seqState, error) {
	if s.c == nil {
		return nil, fmt.Errorf("%w: the zero Seq, or one of no Cache", ErrInvalidSeq)
	}
	if err := s.c.alive(what, s.id); err != nil {
		return nil, err
	}
	return s.state()
}

// useLive is use, refused with ErrSwapped too while the sequence is
// swapped out.
func (s Seq) useLive(what string) (*seqState, error) {
	st, err := s.use(what)
	if err == nil && st.swapped {
		return nil, fmt.Errorf("%w: %v", ErrSwapped, s)
	}
	return st, err
}

// state is the sequence's state, refused for a bad handle; it does not ask
// the pool.
func (s Seq) state() (*seqState, error) {
	if s.c == nil || s.id < 0 || int(s.id) >= len(s.c.seqs) {
		return nil, fmt.Errorf("%w: the zero Seq, or one of no Cache", ErrInvalidSeq)
	}
	st := &s.c.seqs[s.id]
	if !st.live || st.gen != s.gen {
		return nil, fmt.Errorf("%w: %v", ErrFreed, s)
	}
	return st, nil
}

// Len is the number of tokens the sequence holds; 0 after Free.
func (s Seq) Len() int {
	st, err := s.state()
	if err != nil {
		return 0
	}
	return st.n
}

// Pages appends the sequence's page ids, in token order, to dst and
// returns it: token t is in page ids[t / PageTokens], row t % PageTokens.
// A swapped-out sequence has none: ErrSwapped.
func (s Seq) Pages(dst []int32) ([]int32, error) {
	st, err := s.useLive("Pages")
	if err != nil {
		return dst, err
	}
	return append(dst, st.pages...), nil
}

// Append adds tokens (their ids) to the end of the sequence, taking pages as
// it needs them, and returns how many of them, from the first, are cached:
// their keys and values are in the pages already, so the caller computes
// only those of tokens[cached:]. cached counts tokens, a multiple of
// PageTokens; Stats.Hits counts the same reuse in pages.
//
// Cached tokens come from prefix caching: while the sequence ends on a page
// boundary, each whole page of tokens whose prefix (every token before it
// and its own) a full page holds reuses that page instead of taking one.
// Every page Append fills becomes such a page for later sequences. Each
// page reused is a hit (Stats.Hits); each page an Append takes and fills
// whole from its tokens is a miss (Stats.Misses): a prompt's pages, at
// prefill. A page filled over several Appends, as decoding fills it a token
// at a time, is neither.
//
// Appending to a page shared with another sequence (after Fork) copies the
// page first (copy-on-write): a device copy queued on the cache's stream
// (WithStream), so that the caller's kernels queued after it on that
// stream write the copy.
//
// Append changes nothing when it fails: an error wraps ErrNoPages (a
// *NoPagesError) when the pages it needs are not free, ErrFreed,
// ErrInvalidSeq or ErrSwapped for a bad handle, ErrReleased after the
// pool took the pages back, or the CUDA error of the copy. Only the
// memory tool's refusal of the new pages' annotation (when one listens)
// comes after the change.
func (s Seq) Append(tokens []int32) (cached int, err error) {
	st, err := s.useLive("Append")
	if err != nil {
		return 0, err
	}
	c, pt := s.c, s.c.layout.PageTokens
	if len(tokens) == 0 {
		return 0, nil
	}
	hits, chain := c.lookup(st, tokens)
	rest := len(tokens) - len(hits)*pt
	cow := st.n%pt != 0 && c.ref[st.pages[len(st.pages)-1]] > 1
	need := pagesFor(st.n, rest, pt)
	if cow {
		need++
	}
	if avail := c.available() - c.unheld(hits); need > avail {
		return 0, &NoPagesError{Op: "Append", Seq: s.ID(), Needed: need, Free: avail}
	}
	if cow {
		if err := c.copyLast(st, s.id); err != nil {
			return 0, err
		}
	}
	for _, id := range hits {
		c.hold(id)
		st.pages = append(st.pages, id)
		st.n += pt
		c.hits++
	}
	st.chain = chain
	c.write(st, tokens[len(hits)*pt:])
	c.publish()
	return len(hits) * pt, c.annotate()
}

// pagesFor is the new pages a sequence of n tokens takes to hold k more.
func pagesFor(n, k, pt int) int {
	room := 0
	if r := n % pt; r != 0 {
		room = pt - r
	}
	if k <= room {
		return 0
	}
	return (k - room + pt - 1) / pt
}

// lookup finds the cached pages that hold tokens' leading whole pages, as
// Append would reuse them, and the prefix hash after them. It changes
// nothing.
func (c *Cache) lookup(st *seqState, tokens []int32) (hits []int32, chain uint64) {
	pt := c.layout.PageTokens
	hits, chain = c.scratch[:0], st.chain
	if st.n%pt != 0 {
		return hits, chain
	}
	for pos := 0; len(tokens)-pos >= pt; pos += pt {
		page := tokens[pos : pos+pt]
		h := pageHash(chain, page)
		id, ok := c.index[h]
		if !ok || c.parent[id] != chain || !slices.Equal(c.pageTokens(id), page) {
			break
		}
		hits = append(hits, id)
		chain = h
	}
	c.scratch = hits
	return hits, chain
}

// unheld counts the pages of ids (none aside) no sequence holds: reusing
// them takes them off the LRU list, out of what is available.
func (c *Cache) unheld(ids []int32) int {
	k := 0
	for _, id := range ids {
		if id != none && c.ref[id] == 0 {
			k++
		}
	}
	return k
}

// write puts tokens at the end of the sequence, in its last page while it
// has room, then in new pages, which Append has made sure are available.
// A page it fills is entered in the index.
func (c *Cache) write(st *seqState, tokens []int32) {
	pt := c.layout.PageTokens
	for len(tokens) > 0 {
		off := st.n % pt
		if off == 0 {
			id, _ := c.take()
			st.pages = append(st.pages, id)
		}
		id := st.pages[len(st.pages)-1]
		k := min(pt-off, len(tokens))
		copy(c.toks[int(id)*pt+off:], tokens[:k])
		c.fill[id] += int32(k)
		c.filled += uint64(k)
		st.n += k
		tokens = tokens[k:]
		if off+k < pt {
			continue
		}
		if off == 0 {
			c.misses++
		}
		h := pageHash(st.chain, c.pageTokens(id))
		if _, dup := c.index[h]; !dup {
			c.index[h] = id
			c.hashed[id], c.hash[id], c.parent[id] = true, h, st.chain
		}
		st.chain = h
	}
}

// copyPage queues the copy of page src to page dst on the cache's stream,
// within the hold enter took, which it ends even if the runtime panics: a
// hold left open would keep the pool's ReleaseAll waiting for ever.
func (c *Cache) copyPage(src, dst int32) error {
	defer c.leave()
	return c.streams.MemcpyAsync(c.dev, cudart.DeviceMem(c.PagePtr(dst), c.pageBytes), cudart.DeviceMem(c.PagePtr(src), c.pageBytes), cudart.DeviceToDevice, c.cfg.stream)
}

// copyLast gives the sequence a page of its own in place of its last page,
// which another sequence shares: the page's bytes are copied on the device,
// on the cache's stream. seq is the sequence's id, for messages.
func (c *Cache) copyLast(st *seqState, seq int32) error {
	last := st.pages[len(st.pages)-1]
	id, _ := c.take()
	if err := c.annotate(last, id); err != nil {
		c.put(id)
		return err
	}
	if err := c.enter("Append", seq); err != nil {
		c.put(id)
		return err
	}
	err := c.copyPage(last, id)
	if err != nil {
		c.put(id)
		return fmt.Errorf("kvcache: copy-on-write of page %d to page %d: %w", last, id, err)
	}
	pt := c.layout.PageTokens
	copy(c.toks[int(id)*pt:(int(id)+1)*pt], c.pageTokens(last))
	c.fill[id] = c.fill[last]
	c.filled += uint64(c.fill[id])
	c.put(last)
	st.pages[len(st.pages)-1] = id
	st.epoch++
	c.copies++
	return nil
}

func (c *Cache) pageTokens(id int32) []int32 {
	pt := c.layout.PageTokens
	return c.toks[int(id)*pt : (int(id)+1)*pt]
}

// Fork starts a sequence that holds the same tokens in the same pages, each
// page held once more: beam search and parallel sampling share the prompt
// this way. The two part at their next Append, which copies a shared last
// page that is not full. Fork takes no page, so it fails only for a bad
// handle (ErrFreed, ErrInvalidSeq, ErrSwapped), with ErrReleased after the
// pool took the pages back, or with the memory tool's refusal of the
// annotation, after the fork.
func (s Seq) Fork() (Seq, error) {
	if _, err := s.useLive("Fork"); err != nil {
		return Seq{}, err
	}
	c := s.c
	f := c.Create()
	// Create may have grown c.seqs: st is read again.
	st, fs := &c.seqs[s.id], &c.seqs[f.id]
	for _, id := range st.pages {
		c.hold(id)
	}
	fs.pages = append(fs.pages, st.pages...)
	fs.n, fs.chain = st.n, st.chain
	c.publish()
	return f, c.annotate()
}

// Free gives back the sequence's pages: a page no other sequence holds is
// free again, and stays cached for prefix reuse while it is full, until it
// is taken (least recently freed first; a sequence's later pages before its
// earlier ones, which more sequences share); a swapped-out sequence's host
// pages are free again, and so are the pages it kept on the device. Every
// copy of s is refused after, with ErrFreed. An error other than ErrFreed,
// ErrInvalidSeq or ErrReleased (after the pool took the pages back, when
// Free changes nothing) is the memory tool's refusal of the annotation,
// after the pages were freed.
func (s Seq) Free() error {
	st, err := s.use("Free")
	if err != nil {
		return err
	}
	for i := len(st.pages) - 1; i >= 0; i-- {
		if st.swapped && st.host[i] != none {
			s.c.swapFree = append(s.c.swapFree, st.host[i])
			s.c.swapped--
		} else {
			s.c.put(st.pages[i])
		}
	}
	st.pages, st.n, st.live, st.swapped = st.pages[:0], 0, false, false
	st.gen++
	s.c.freeSeqs = append(s.c.freeSeqs, s.id)
	s.c.publish()
	return s.c.annotate()
}
