package kvcache

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkInvariants holds the cache's books against its sequences: every
// page is held, cached or free and only one of those; a page's count is the
// number of sequences that hold it; the LRU list and the index agree with
// the pages; the token counts and utilization follow; a swapped-out
// sequence holds no device page, and the host pages of the swap space are
// each free or a swapped-out sequence's.
func checkInvariants(t *testing.T, c *Cache, live []Seq) {
	t.Helper()
	holders := make([]int32, c.n)
	tokens := 0
	swapped := map[int32]bool{}
	for _, id := range c.swapFree {
		swapped[id] = true
	}
	for _, s := range live {
		st, err := s.state()
		require.NoError(t, err)
		require.Equal(t, (s.Len()+c.layout.PageTokens-1)/c.layout.PageTokens, len(st.pages), "%v holds the pages its tokens need", s)
		if !s.Swapped() {
			ids, err := s.Pages(nil)
			require.NoError(t, err)
			require.True(t, slices.Equal(st.pages, ids))
		}
		seen := map[int32]bool{}
		for i, id := range st.pages {
			if s.Swapped() && st.host[i] != none {
				require.Equal(t, none, id, "page %d of swapped-out %v is on the host, not the device", i, s)
				slot := st.host[i]
				require.False(t, swapped[slot], "host page %d is free or held twice", slot)
				swapped[slot] = true
				continue
			}
			require.NotEqual(t, none, id, "page %d of %v is nowhere", i, s)
			require.False(t, seen[id], "%v holds page %d twice", s, id)
			seen[id] = true
			holders[id]++
		}
		tokens += s.Len()
	}
	require.Len(t, swapped, c.cfg.swap, "every host page is free or held")
	require.Equal(t, c.cfg.swap-len(c.swapFree), c.swapped)
	state := make([]byte, c.n) // 'h'eld, 'c'ached, 'f'ree
	for id, k := range holders {
		require.Equal(t, k, c.ref[id], "page %d's count", id)
		if k > 0 {
			state[id] = 'h'
		}
	}
	for _, id := range c.free {
		require.Zero(t, state[id], "free page %d is also %c", id, state[id])
		state[id] = 'f'
		require.False(t, c.hashed[id], "free page %d is cached", id)
	}
	n := 0
	for id, prev := c.head, none; id != none; prev, id = id, c.next[id] {
		require.Equal(t, prev, c.prev[id])
		require.Zero(t, state[id], "cached page %d is also %c", id, state[id])
		state[id] = 'c'
		require.True(t, c.hashed[id], "page %d in the LRU list has no prefix", id)
		n++
	}
	require.Equal(t, n, c.lruLen)
	for id, s := range state {
		require.NotZero(t, s, "page %d is neither held, cached nor free", id)
	}
	for h, id := range c.index {
		require.True(t, c.hashed[id] && c.hash[id] == h, "index entry %x names page %d, which does not hold it", h, id)
		require.Equal(t, int32(c.layout.PageTokens), c.fill[id], "only full pages are indexed")
	}
	filled := uint64(0)
	for id, k := range holders {
		if k > 0 {
			filled += uint64(c.fill[id])
		}
	}
	st := c.Stats()
	require.Equal(t, filled, st.Tokens)
	require.LessOrEqual(t, st.Tokens, uint64(tokens), "shared pages count once")
	require.Equal(t, int(c.n), st.Used+st.Cached+st.Free)
	require.Equal(t, len(live), st.Seqs)
	require.GreaterOrEqual(t, st.Utilization, 0.0)
	require.LessOrEqual(t, st.Utilization, 1.0)
}

// TestInvariantsUnderRandomOperations drives a small cache with random
// creates, appends (from a few shared prompts, so that prefixes hit), forks
// and frees, and checks the books after each.
func TestInvariantsUnderRandomOperations(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	for seed := uint64(1); seed <= 4; seed++ {
		c, _, _ := newCache(t, WithPages(24), WithSwap(12))
		r := rand.New(rand.NewPCG(seed, seed))
		var live []Seq
		refused := 0
		for range steps {
			switch op := r.IntN(10); {
			case op < 2 || len(live) == 0:
				live = append(live, c.Create())
			case op < 7:
				s := live[r.IntN(len(live))]
				from := 100 * r.IntN(3) // three prompts
				if s.Len() > 0 {
					from = 1000 + r.IntN(5)
				}
				before := s.Len()
				cached, err := s.Append(toks(from, 1+r.IntN(9)))
				if s.Swapped() {
					require.ErrorIs(t, err, ErrSwapped)
				} else if err != nil {
					require.ErrorIs(t, err, ErrNoPages)
					require.Equal(t, before, s.Len(), "a refused Append changes nothing")
					refused++
				} else {
					require.GreaterOrEqual(t, s.Len()-before, cached)
				}
			case op < 8:
				if s := live[r.IntN(len(live))]; s.Swapped() {
					if err := s.SwapIn(); err != nil {
						require.ErrorIs(t, err, ErrNoPages)
					}
				} else if r.IntN(2) == 0 {
					f, err := s.Fork()
					require.NoError(t, err)
					live = append(live, f)
				} else {
					alone := 0
					for _, id := range pagesOf(t, s) {
						if c.ref[id] == 1 {
							alone++
						}
					}
					before := c.Stats()
					if err := s.SwapOut(); err != nil {
						require.ErrorIs(t, err, ErrNoPages)
						require.Equal(t, before, c.Stats(), "a refused SwapOut changes nothing")
					} else {
						after := c.Stats()
						require.Equal(t, before.Used-alone, after.Used, "SwapOut frees the pages %v held alone, and only those", s)
						require.Equal(t, before.SwapOuts+uint64(alone), after.SwapOuts, "and copies them")
					}
				}
			default:
				i := r.IntN(len(live))
				require.NoError(t, live[i].Free())
				live = append(live[:i], live[i+1:]...)
			}
			checkInvariants(t, c, live)
		}
		st := c.Stats()
		assert.Positive(t, st.Hits, "seed %d: prefixes were reused", seed)
		assert.Positive(t, st.Copies, "seed %d: pages were copied on write", seed)
		assert.Positive(t, st.Evictions, "seed %d: cached pages were evicted", seed)
		assert.Positive(t, refused, "seed %d: the cache ran out", seed)
		assert.Positive(t, st.SwapIns, "seed %d: sequences were swapped in", seed)
	}
}
