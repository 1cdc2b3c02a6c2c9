package kvcache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// randomPages fills each of s's pages whole with random bytes and returns
// them, page by page.
func randomPages(t *testing.T, c *Cache, rt cudart.Runtime, s Seq, seed uint64) [][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	var out [][]byte
	for _, id := range pagesOf(t, s) {
		b := make([]byte, c.PageBytes())
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		fillPage(t, c, rt, id, b)
		out = append(out, b)
	}
	return out
}

// TestSwapRestoresContentsExactly: a sequence swapped out gives its pages
// back, another sequence takes and overwrites them all, and swapped in
// (once pages are free) the sequence's pages hold its bytes again, and it
// goes on: appends, and its full pages are found by prefix.
func TestSwapRestoresContentsExactly(t *testing.T) {
	c, rt, _ := newCache(t, WithPages(6), WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 10)) // 2 full pages and 2 tokens
	require.NoError(t, err)
	want := randomPages(t, c, rt, a, 1)

	require.NoError(t, a.SwapOut())
	assert.True(t, a.Swapped())
	assert.Equal(t, 10, a.Len())
	st := c.Stats()
	assert.Equal(t, Stats{Pages: 6, Cached: 2, Free: 4, Seqs: 1, Reserved: 6 << 10, Misses: 2,
		SwapPages: 4, Swapped: 3, SwapOuts: 3}, st, "its pages are free on the device, the full ones cached")

	o := c.Create()
	_, err = o.Append(toks(1000, 6*small.PageTokens)) // every page, the cached ones evicted
	require.NoError(t, err)
	randomPages(t, c, rt, o, 2)
	before := c.Stats()
	err = a.SwapIn()
	var np *NoPagesError
	require.ErrorAs(t, err, &np)
	assert.Equal(t, NoPagesError{Op: "SwapIn", Seq: a.ID(), Needed: 3, Free: 0}, *np)
	assert.Equal(t, before, c.Stats(), "a refused SwapIn changes nothing")
	assert.True(t, a.Swapped())

	require.NoError(t, o.Free())
	require.NoError(t, a.SwapIn())
	assert.False(t, a.Swapped())
	require.NoError(t, rt.DeviceSynchronize(0))
	for i, id := range pagesOf(t, a) {
		assert.True(t, bytes.Equal(want[i], readPage(t, c, rt, id, len(want[i]))), "page %d of a (page id %d) holds its bytes again", i, id)
	}
	st = c.Stats()
	assert.Equal(t, 0, st.Swapped)
	assert.Equal(t, uint64(3), st.SwapIns)
	assert.Equal(t, uint64(10), st.Tokens)

	_, err = a.Append(toks(10, 3)) // fills the third page
	require.NoError(t, err)
	b := c.Create()
	cached, err := b.Append(toks(0, 12))
	require.NoError(t, err)
	assert.Equal(t, 12, cached, "a's pages are found by prefix again")
	checkInvariants(t, c, []Seq{a, b})
}

// TestSwapOutMovesOnlyThePagesItHoldsAlone: a fork sharing 3 of its 4
// pages with the sequence it was forked from copies only its own page to
// the swap space and frees only that one on the device; the 3 it shares
// stay there, held by both. Swapped in, after another sequence took and
// overwrote the page freed, it holds the same shared pages and its own
// page's bytes again, and goes on.
func TestSwapOutMovesOnlyThePagesItHoldsAlone(t *testing.T) {
	c, rt, _ := newCache(t, WithPages(5), WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 3*small.PageTokens))
	require.NoError(t, err)
	shared := randomPages(t, c, rt, a, 4)
	b, err := a.Fork()
	require.NoError(t, err)
	_, err = b.Append(toks(100, 2)) // its own fourth page
	require.NoError(t, err)
	pb := pagesOf(t, b)
	own := bytes.Repeat([]byte("b's own page "), int(c.PageBytes())/13)
	fillPage(t, c, rt, pb[3], own)
	before := c.Stats()
	require.Equal(t, 4, before.Used)

	require.NoError(t, b.SwapOut())
	st := c.Stats()
	assert.Equal(t, uint64(1), st.SwapOuts, "one page copied")
	assert.Equal(t, 1, st.Swapped, "one host page taken")
	assert.Equal(t, 3, st.Used, "one device page freed; the shared ones are still b's and a's")
	assert.Equal(t, before.Free+1, st.Free)
	assert.Equal(t, before.Tokens-2, st.Tokens)
	checkInvariants(t, c, []Seq{a, b})

	o := c.Create()
	_, err = o.Append(toks(1000, 2*small.PageTokens)) // the page b freed, and the last one
	require.NoError(t, err)
	randomPages(t, c, rt, o, 6)
	require.NoError(t, o.Free())
	require.NoError(t, b.SwapIn())
	require.NoError(t, rt.DeviceSynchronize(0))
	got := pagesOf(t, b)
	assert.Equal(t, pb[:3], got[:3], "the shared pages are the same pages")
	assert.Equal(t, pagesOf(t, a), got[:3])
	for i, id := range got[:3] {
		assert.True(t, bytes.Equal(shared[i], readPage(t, c, rt, id, len(shared[i]))), "shared page %d", i)
	}
	assert.True(t, bytes.Equal(own, readPage(t, c, rt, got[3], len(own))), "b's own page holds its bytes again")
	st = c.Stats()
	assert.Equal(t, uint64(1), st.SwapIns)
	assert.Zero(t, st.SwapHits)
	assert.Zero(t, st.Swapped)
	assert.Equal(t, before.Used, st.Used)
	assert.Equal(t, before.Tokens, st.Tokens)
	_, err = b.Append(toks(102, 3)) // fills its own page, then a fifth
	require.NoError(t, err)
	checkInvariants(t, c, []Seq{a, b})
}

// TestSwapKeepsSharedPagesOnTheDevice: a sequence that shares every page
// with a fork copies nothing when swapped out, and holds its pages still:
// the fork, appending to the partial page they share, copies it on write,
// and the sequence swapped in finds its own bytes in it.
func TestSwapKeepsSharedPagesOnTheDevice(t *testing.T) {
	c, rt, _ := newCache(t, WithPages(8), WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 6))
	require.NoError(t, err)
	want := randomPages(t, c, rt, a, 3)
	pa := pagesOf(t, a)
	f, err := a.Fork()
	require.NoError(t, err)
	require.NoError(t, a.SwapOut())
	st := c.Stats()
	assert.Zero(t, st.SwapOuts)
	assert.Zero(t, st.Swapped)
	assert.Equal(t, 2, st.Used, "a and f hold them")
	_, err = f.Append(toks(6, 1)) // the partial page is a's too: copied
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.Stats().Copies)
	pf := pagesOf(t, f)
	fillPage(t, c, rt, pf[1], []byte("f writes its copy"))
	require.NoError(t, a.SwapIn())
	require.NoError(t, rt.DeviceSynchronize(0))
	assert.Equal(t, pa, pagesOf(t, a), "a holds the pages it held")
	for i, id := range pa {
		assert.True(t, bytes.Equal(want[i], readPage(t, c, rt, id, len(want[i]))), "page %d of a", i)
	}
	assert.Equal(t, pf[0], pa[0], "the full page is shared still")
	st = c.Stats()
	assert.Zero(t, st.SwapIns)
	assert.Zero(t, st.SwapHits)
	assert.Equal(t, 3, st.Used)
	checkInvariants(t, c, []Seq{a, f})
	require.NoError(t, f.Free())
	require.NoError(t, a.SwapOut())
	assert.Equal(t, uint64(2), c.Stats().SwapOuts, "a holds both alone now")
	require.NoError(t, a.Free())
	assert.Equal(t, Stats{Pages: 8, Cached: 1, Free: 7, Reserved: 8 << 10, Misses: 1, Copies: 1, SwapPages: 4, SwapOuts: 2}, c.Stats())
}

// TestSwapKeepsASharedPromptStoredOnce: sequences that share a prompt's
// pages by prefix, swapped out and in in turn while the others run, keep
// those pages, not copies: the prompt stays stored once, and is never
// copied. Of each sequence's own pages, both are copied out; the full one
// is still cached and found again: only the partial one is copied back.
func TestSwapKeepsASharedPromptStoredOnce(t *testing.T) {
	c, rt, _ := newCache(t, WithPages(16), WithSwap(16))
	prompt := toks(0, 3*small.PageTokens)
	seqs := make([]Seq, 3)
	for i := range seqs {
		seqs[i] = c.Create()
		cached, err := seqs[i].Append(append(append([]int32(nil), prompt...), toks(100*(i+1), 6)...))
		require.NoError(t, err)
		if i > 0 {
			assert.Equal(t, len(prompt), cached)
		}
	}
	shared := pagesOf(t, seqs[0])[:3]
	for _, s := range seqs {
		want := randomPages(t, c, rt, s, uint64(s.ID())+10)[3:] // its own pages; the prompt's are the last sequence's bytes
		require.NoError(t, s.SwapOut())
		assert.Equal(t, 3+2*2, c.Stats().Used, "the prompt's pages stay held by the others")
		require.NoError(t, s.SwapIn())
		require.NoError(t, rt.DeviceSynchronize(0))
		got := pagesOf(t, s)
		assert.Equal(t, shared, got[:3], "%v holds the prompt's pages again", s)
		for i, id := range got[3:] {
			assert.True(t, bytes.Equal(want[i], readPage(t, c, rt, id, len(want[i]))), "own page %d of %v", i, s)
		}
		assert.Equal(t, 3+3*2, c.Stats().Used, "the prompt once, and two pages a sequence")
		checkInvariants(t, c, seqs)
	}
	st := c.Stats()
	assert.Equal(t, uint64(3*2), st.SwapOuts)
	assert.Equal(t, uint64(3), st.SwapIns)
	assert.Equal(t, uint64(3), st.SwapHits)
}

func TestSwapRefusals(t *testing.T) {
	c, _, _ := newCache(t, WithPages(8), WithSwap(2))
	a := c.Create()
	_, err := a.Append(toks(0, 9))
	require.NoError(t, err)
	err = a.SwapOut()
	var np *NoPagesError
	require.ErrorAs(t, err, &np)
	require.ErrorIs(t, err, ErrNoPages)
	assert.Equal(t, NoPagesError{Op: "SwapOut", Seq: a.ID(), Needed: 3, Free: 2, Host: true}, *np)
	assert.Equal(t, "kvcache: not enough free pages: SwapOut for sequence 0 needs 3 host page(s) of the swap space; 2 free", err.Error())
	assert.False(t, a.Swapped())
	err = a.SwapIn()
	require.ErrorIs(t, err, ErrNotSwapped)
	assert.NotErrorIs(t, err, ErrSwapped)
	assert.EqualError(t, err, "kvcache: sequence not swapped out: SwapIn of seq 0, whose pages are on the device; SwapOut comes first")

	b := c.Create()
	_, err = b.Append(toks(100, 5))
	require.NoError(t, err)
	require.NoError(t, b.SwapOut())
	require.ErrorIs(t, b.SwapOut(), ErrSwapped)
	_, err = b.Append(toks(105, 1))
	require.ErrorIs(t, err, ErrSwapped)
	_, err = b.Fork()
	require.ErrorIs(t, err, ErrSwapped)
	_, err = b.Pages(nil)
	require.ErrorIs(t, err, ErrSwapped)
	tb, err := c.NewTables(1, 4)
	require.NoError(t, err)
	defer func() { require.NoError(t, tb.Close()) }()
	_, err = tb.Sync([]Seq{b})
	require.ErrorIs(t, err, ErrSwapped)
	assert.Equal(t, 2, c.Stats().Swapped)
	require.NoError(t, b.Free(), "a swapped-out sequence frees its host pages")
	assert.Zero(t, c.Stats().Swapped)
	require.NoError(t, a.Free())
	assert.Equal(t, Stats{Pages: 8, Cached: 3, Free: 5, Reserved: 8 << 10, Misses: 3, SwapPages: 2, SwapOuts: 2}, c.Stats())

}

// TestSwapOutWithoutASwapSpace: SwapOut on a Cache made without WithSwap
// is a mistake of configuration, refused as such (not as a want of pages,
// which a scheduler would handle by waiting), whatever the sequence holds,
// and changes nothing.
func TestSwapOutWithoutASwapSpace(t *testing.T) {
	c, _, _ := newCache(t, WithPages(2))
	for _, n := range []int{1, 0} {
		s := c.Create()
		_, err := s.Append(toks(0, n))
		require.NoError(t, err)
		before := c.Stats()
		err = s.SwapOut()
		require.ErrorIs(t, err, ErrNoSwap)
		assert.NotErrorIs(t, err, ErrNoPages)
		assert.Equal(t, fmt.Sprintf("kvcache: no swap space: SwapOut of seq %d: the Cache has no host pages to copy its pages to; give New kvcache.WithSwap(n) for a swap space of n pages in the pool's pinned host arena", s.ID()), err.Error())
		assert.False(t, s.Swapped())
		assert.Equal(t, before, c.Stats())
	}
}

// TestSwapCopyRefusedChangesNothing: a copy the runtime refuses fails the
// swap, which leaves the sequence as it was.
func TestSwapCopyRefusedChangesNothing(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	c, _, _ := newCacheOn(t, rt, WithPages(4), WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 6))
	require.NoError(t, err)
	pa := pagesOf(t, a)
	before := c.Stats()
	require.NoError(t, rt.FailCallNth("cudaMemcpyAsync", 2, cudart.ErrInvalidValue.Code))
	err = a.SwapOut()
	require.ErrorIs(t, err, cudart.ErrInvalidValue)
	assert.Contains(t, err.Error(), "swap out page")
	assert.Equal(t, before, c.Stats())
	assert.Equal(t, pa, pagesOf(t, a))

	require.NoError(t, a.SwapOut())
	before = c.Stats()
	// Its full page is still cached: only the partial one is copied back.
	require.NoError(t, rt.FailCallNth("cudaMemcpyAsync", 1, cudart.ErrInvalidValue.Code))
	err = a.SwapIn()
	require.ErrorIs(t, err, cudart.ErrInvalidValue)
	assert.True(t, a.Swapped())
	after := c.Stats()
	assert.Equal(t, before.Used, after.Used)
	assert.Equal(t, before.Cached, after.Cached, "the page found is cached again")
	assert.Equal(t, before.Swapped, after.Swapped)
	checkInvariants(t, c, []Seq{a})
	require.NoError(t, a.SwapIn())
	checkInvariants(t, c, []Seq{a})
}

// TestSwappedPagesAreNotTheSequencesOnTheFake: with the memory tool
// listening, swapping out and back in is allowed, and a read of a page the
// sequence held before it was swapped out faults, naming it.
func TestSwappedPagesAreNotTheSequencesOnTheFake(t *testing.T) {
	c, rt := newCheckedCache(t, 8, WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 6))
	require.NoError(t, err)
	pa := pagesOf(t, a)
	require.NoError(t, a.SwapOut())
	assert.Empty(t, regionNames(t, c, rt))
	err = readOnStream(c, rt, pa[1])
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), `it was in "kvcache page 1 (seq 0)"`)
}

func TestSwapInUnderTheMemoryTool(t *testing.T) {
	c, rt := newCheckedCache(t, 8, WithSwap(4))
	a := c.Create()
	_, err := a.Append(toks(0, 6))
	require.NoError(t, err)
	require.NoError(t, a.SwapOut())
	require.NoError(t, a.SwapIn())
	assert.Len(t, regionNames(t, c, rt), 2)
	for _, id := range pagesOf(t, a) {
		require.NoError(t, readOnStream(c, rt, id))
	}
}
