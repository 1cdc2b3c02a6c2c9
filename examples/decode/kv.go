package main

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/kvcache"
)

// kvStore is how a run keeps its sequences' keys and values: the paged
// cache, or the baseline's contiguous maximum-length reservations. Each
// running sequence has a row of the page table the kernels read.
type kvStore interface {
	name() string
	// admit starts r if the tokens it holds so far, but the last, fit
	// now with a row free: it returns ok, and the leading tokens whose
	// keys and values are cached already (prefix caching).
	admit(r *live) (cached int, ok bool, err error)
	// grow appends r's last token; ok is false when no page is free.
	grow(r *live) (ok bool, err error)
	// free gives back r's memory and row.
	free(r *live) error
	// preempt makes room by taking r off the device: swapped is true if
	// its pages went to the host (resume brings them back), false if they
	// were freed (r starts again from its tokens).
	preempt(r *live) (swapped bool, err error)
	// resume brings a swapped-out r back with its last token appended;
	// ok is false while it does not fit.
	resume(r *live) (ok bool, err error)
	// sync brings the page tables of rows (by row; nil is no sequence)
	// to the device and says where the kernels find them.
	sync(rows []*live) (kvView, error)
	// rows is the page table's rows: the most sequences at once.
	rows() int
	// usage is the bytes of the tokens held and the bytes that hold
	// them (pages or reservations), against reserved, the arena's bytes.
	usage(running []*live) (tokenBytes, held, reserved uint64)
	// counts are the pages swapped out and in, and those a swap-in found
	// on the device.
	counts() (swapOuts, swapIns, swapHits uint64)
}

// paged keeps sequences in the kvcache: pages taken as they grow, prefix
// caching, swapping.
type paged struct {
	e       *engine
	rowFree []int
	seqs    []kvcache.Seq // the Sync batch, by row
}

func newPaged(e *engine) *paged {
	p := &paged{e: e, seqs: make([]kvcache.Seq, e.tables.Rows())}
	for i := e.tables.Rows() - 1; i >= 0; i-- {
		p.rowFree = append(p.rowFree, i)
	}
	return p
}

func (p *paged) name() string { return "paged" }
func (p *paged) rows() int    { return len(p.seqs) }

func (p *paged) takeRow(r *live) {
	r.row = p.rowFree[len(p.rowFree)-1]
	p.rowFree = p.rowFree[:len(p.rowFree)-1]
	p.seqs[r.row] = r.seq
}

func (p *paged) dropRow(r *live) {
	p.seqs[r.row] = kvcache.Seq{}
	p.rowFree = append(p.rowFree, r.row)
	r.row = -1
}

func (p *paged) admit(r *live) (int, bool, error) {
	if len(p.rowFree) == 0 {
		return 0, false, nil
	}
	held := r.tokens[:len(r.tokens)-1]
	if err := p.e.cache.Admit(held, 1); err != nil {
		if errors.Is(err, kvcache.ErrNoPages) {
			return 0, false, nil
		}
		return 0, false, err
	}
	r.seq = p.e.cache.Create()
	cached, err := r.seq.Append(held)
	if err != nil {
		return 0, false, errors.Join(err, r.seq.Free())
	}
	p.takeRow(r)
	return cached, true, nil
}

func (p *paged) grow(r *live) (bool, error) {
	_, err := r.seq.Append(r.tokens[len(r.tokens)-1:])
	if errors.Is(err, kvcache.ErrNoPages) {
		return false, nil
	}
	return err == nil, err
}

func (p *paged) free(r *live) error {
	p.dropRow(r)
	err := r.seq.Free()
	r.seq = kvcache.Seq{}
	return err
}

func (p *paged) preempt(r *live) (bool, error) {
	err := r.seq.SwapOut()
	if err == nil {
		p.dropRow(r)
		return true, nil
	}
	var np *kvcache.NoPagesError
	if !errors.As(err, &np) || !np.Host {
		return false, err
	}
	// The swap space is full: recompute, as vLLM does for a group it
	// cannot swap. Its full pages stay cached, and its prompt finds them.
	return false, p.free(r)
}

func (p *paged) resume(r *live) (bool, error) {
	st := p.e.cache.Stats()
	n := len(r.tokens) - 1
	need := (n+pageTokens-1)/pageTokens + 1
	reserve := st.Pages / 100
	if len(p.rowFree) == 0 || need > st.Free+st.Cached-reserve {
		return false, nil
	}
	if err := r.seq.SwapIn(); err != nil {
		if errors.Is(err, kvcache.ErrNoPages) {
			return false, nil
		}
		return false, err
	}
	p.takeRow(r)
	ok, err := p.grow(r)
	if err == nil && !ok {
		err = fmt.Errorf("%v: no page for its next token right after SwapIn", r.seq)
	}
	return ok, err
}

func (p *paged) sync(_ []*live) (kvView, error) {
	b, err := p.e.tables.Sync(p.seqs)
	if err != nil {
		return kvView{}, err
	}
	return kvView{table: b.Table, maxPages: b.MaxPages, pages: p.e.cache.Base(), stride: p.e.cache.PageStride()}, nil
}

func (p *paged) usage([]*live) (uint64, uint64, uint64) {
	st := p.e.cache.Stats()
	return st.TokenBytes, uint64(st.Used) * p.e.cache.PageStride(), st.Reserved
}

func (p *paged) counts() (uint64, uint64, uint64) {
	st := p.e.cache.Stats()
	return st.SwapOuts, st.SwapIns, st.SwapHits
}

// contiguous is the baseline: each sequence reserves the context's tokens
// (its maximum length) in one piece at admission, as systems before paging
// did. The reservations are slots of the same bytes as the paged cache,
// and the kernels read them through a page table whose rows are
// consecutive pages, fixed at setup: the same kernels, another layout.
type contiguous struct {
	e        *engine
	slotFree []int
	inUse    int
}

func newContiguous(e *engine) *contiguous {
	c := &contiguous{e: e}
	for i := e.contigSlots - 1; i >= 0; i-- {
		c.slotFree = append(c.slotFree, i)
	}
	return c
}

func (c *contiguous) name() string { return "contiguous" }
func (c *contiguous) rows() int    { return c.e.contigSlots }

func (c *contiguous) admit(r *live) (int, bool, error) {
	if len(c.slotFree) == 0 {
		return 0, false, nil
	}
	r.row = c.slotFree[len(c.slotFree)-1]
	c.slotFree = c.slotFree[:len(c.slotFree)-1]
	c.inUse++
	return 0, true, nil
}

func (c *contiguous) grow(r *live) (bool, error) {
	if len(r.tokens) > c.e.s.ctx {
		return false, fmt.Errorf("request %d: %d tokens, past the context of %d", r.id, len(r.tokens), c.e.s.ctx)
	}
	return true, nil
}

func (c *contiguous) free(r *live) error {
	c.slotFree = append(c.slotFree, r.row)
	c.inUse--
	r.row = -1
	return nil
}

func (c *contiguous) preempt(*live) (bool, error) {
	return false, errors.New("the baseline reserves every sequence's maximum length: nothing to preempt")
}

func (c *contiguous) resume(*live) (bool, error) {
	return false, errors.New("the baseline swaps nothing out")
}

func (c *contiguous) sync([]*live) (kvView, error) {
	ctxPages := c.e.s.ctx / pageTokens
	return kvView{table: c.e.contigTable, maxPages: ctxPages, pages: c.e.contig, stride: c.e.cache.PageStride()}, nil
}

func (c *contiguous) usage(running []*live) (uint64, uint64, uint64) {
	var toks uint64
	for _, r := range running {
		toks += uint64(len(r.tokens))
	}
	tb := c.e.tokenBytes()
	ctxPages := uint64(c.e.s.ctx / pageTokens)
	return toks * tb, uint64(c.inUse) * ctxPages * c.e.cache.PageStride(), uint64(c.e.cache.Pages()) * c.e.cache.PageStride()
}

func (c *contiguous) counts() (uint64, uint64, uint64) { return 0, 0, 0 }

// tokenBytes is one token's keys and values over every layer.
func (e *engine) tokenBytes() uint64 {
	n, _ := e.cache.Layout().TokenBytes()
	return n
}
