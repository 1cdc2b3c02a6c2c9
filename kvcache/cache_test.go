package kvcache

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// small is a layout whose page is 1 KiB: 4 tokens of 2 layers × 2 heads ×
// 16 dims in FP16.
var small = Layout{Layers: 2, KVHeads: 2, HeadDim: 16, DType: FP16, PageTokens: 4}

// newCache is a Cache of small's pages on a fresh pool (64 MiB of device
// arena, 1 MiB pinned for page tables and swap space) of the runtime
// cudarttest.Open gives: CUDA on a GPU host, else the fake.
func newCache(t testing.TB, opts ...Option) (*Cache, cudart.Full, *pool.Pool) {
	t.Helper()
	return newCacheOn(t, cudarttest.Open(t), opts...)
}

// newCacheOn is newCache on rt, for the tests that need the fake's own
// features (fault injection, the memory tool's names).
func newCacheOn(t testing.TB, rt cudart.Full, opts ...Option) (*Cache, cudart.Full, *pool.Pool) {
	t.Helper()
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(1<<20))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	c, err := New(rt, p, small, opts...)
	require.NoError(t, err)
	return c, rt, p
}

func TestLayoutBytes(t *testing.T) {
	for _, tt := range []struct {
		name       string
		l          Layout
		token, pgb uint64
		err        bool
	}{
		{"fp16", small, 2 * 2 * 2 * 16 * 2, 4 * 256, false},
		{"bf16 llama-7b", Layout{32, 32, 128, BF16, 16}, 524288, 8 << 20, false},
		{"fp32", Layout{1, 1, 1, FP32, 1}, 8, 8, false},
		{"no layers", Layout{0, 1, 1, FP16, 1}, 0, 0, true},
		{"negative heads", Layout{1, -1, 1, FP16, 1}, 0, 0, true},
		{"no type", Layout{1, 1, 1, 0, 1}, 0, 0, true},
		{"unknown type", Layout{1, 1, 1, 9, 1}, 0, 0, true},
		{"token overflows", Layout{math.MaxInt, math.MaxInt, 1, FP16, 1}, 0, 0, true},
		{"page overflows", Layout{1 << 20, 1 << 20, 1 << 10, FP32, 1 << 20}, 0, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pgb, err := tt.l.PageBytes()
			if tt.err {
				require.ErrorIs(t, err, ErrInvalidLayout)
				assert.Contains(t, err.Error(), "kvcache: invalid layout")
				return
			}
			require.NoError(t, err)
			tok, err := tt.l.TokenBytes()
			require.NoError(t, err)
			assert.Equal(t, tt.token, tok)
			assert.Equal(t, tt.pgb, pgb)
		})
	}
}

func TestLayoutOffset(t *testing.T) {
	row := uint64(small.KVHeads * small.HeadDim * 2)
	assert.Equal(t, uint64(0), small.Offset(0, 0, false))
	assert.Equal(t, 3*row, small.Offset(0, 3, false))
	assert.Equal(t, 4*row, small.Offset(0, 0, true), "layer 0's values follow its keys")
	assert.Equal(t, 8*row+1*row, small.Offset(1, 1, false))
	pgb, _ := small.PageBytes()
	assert.Equal(t, pgb-row, small.Offset(small.Layers-1, small.PageTokens-1, true), "the last row ends the page")
}

func TestNewSizesTheArena(t *testing.T) {
	const stride = 1024
	for _, tt := range []struct {
		name  string
		opts  []Option
		pages int
		err   error
	}{
		{"pages", []Option{WithPages(10)}, 10, nil},
		{"bytes round down", []Option{WithBytes(10*stride + stride - 1)}, 10, nil},
		{"fraction of the room after the weights", []Option{WithFreeFraction(0.5)}, (64<<20 - 16<<20) / 2 / stride, nil},
		{"default fraction", nil, defaultPages(64<<20-16<<20, stride), nil},
		{"less than a page", []Option{WithBytes(stride - 1)}, 0, ErrInvalidOption},
		{"sized twice", []Option{WithPages(1), WithBytes(stride)}, 0, ErrInvalidOption},
		{"nil option", []Option{nil}, 0, ErrInvalidOption},
		{"fraction above 1", []Option{WithFreeFraction(1.5)}, 0, ErrInvalidOption},
		{"fraction NaN", []Option{WithFreeFraction(math.NaN())}, 0, ErrInvalidOption},
		{"no pages", []Option{WithPages(0)}, 0, ErrInvalidOption},
		{"watermark 1", []Option{WithWatermark(1)}, 0, ErrInvalidOption},
		{"more than the arena", []Option{WithPages(64<<10 + 1)}, 0, pool.ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := cudarttest.Open(t)
			p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			_, err = p.WantDevice(16<<20, pool.Name("weights"))
			require.NoError(t, err)
			c, err := New(rt, p, small, tt.opts...)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.pages, c.Pages())
			assert.Equal(t, uint64(stride), c.PageStride())
			st := c.Stats()
			assert.Equal(t, Stats{Pages: tt.pages, Free: tt.pages, Reserved: uint64(tt.pages) * stride}, st)
			assert.Equal(t, p.Stats().Device.Used, 16<<20+uint64(tt.pages)*stride, "the pages follow the weights")
		})
	}
}

// TestNewRefusesACommittedPool: the pages are a buffer the pool places, so
// the Cache comes before Commit, which the refusal says, as NewTables'
// does.
func TestNewRefusesACommittedPool(t *testing.T) {
	rt := cudarttest.Open(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(1<<20))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	c, err := New(rt, p, small, WithPages(1))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	_, err = New(rt, p, small, WithPages(1))
	require.ErrorIs(t, err, pool.ErrCommitted)
	assert.Contains(t, err.Error(), "create the Cache before Commit")
	_, err = c.NewTables(1, 1)
	require.ErrorIs(t, err, pool.ErrCommitted)
	assert.Contains(t, err.Error(), "make the page tables before Commit")
}

// TestNewChecksTheStream: a stream CUDA does not know, or one of another
// device, is refused by New, not by the first copy on it.
func TestNewChecksTheStream(t *testing.T) {
	rt := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	p, err := pool.New(rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	mine, err := rt.StreamCreate(0)
	require.NoError(t, err)
	other, err := rt.StreamCreate(1)
	require.NoError(t, err)
	gone, err := rt.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, rt.StreamDestroy(0, gone))
	defer func() {
		require.NoError(t, rt.StreamDestroy(0, mine))
		require.NoError(t, rt.StreamDestroy(1, other))
	}()
	for _, tt := range []struct {
		name   string
		stream cudart.Stream
		msg    string
	}{
		{"never created", 0xbad0, "CUDA does not know the stream"},
		{"destroyed", gone, "CUDA does not know the stream"},
		{"another device's", other, "the stream is device 1's; the pool's pages are device 0's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Stats()
			_, err := New(rt, p, small, WithPages(1), WithStream(tt.stream))
			require.ErrorIs(t, err, ErrInvalidOption)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, before, p.Stats(), "nothing requested")
		})
	}
	for _, s := range []cudart.Stream{mine, 0} {
		_, err = New(rt, p, small, WithPages(1), WithStream(s))
		require.NoError(t, err, "stream %#x", uintptr(s))
	}
}

func toks(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

// newSeqs creates n sequences in c, the i-th holding tokens(i), or none
// where tokens is nil.
func newSeqs(tb testing.TB, c *Cache, n int, tokens func(i int) []int32) []Seq {
	tb.Helper()
	seqs := make([]Seq, n)
	for i := range seqs {
		seqs[i] = c.Create()
		if tokens != nil {
			_, err := seqs[i].Append(tokens(i))
			require.NoError(tb, err)
		}
	}
	return seqs
}

// twoSeqs creates two sequences in c: a holding na tokens from 0, and b nb
// tokens from 100.
func twoSeqs(tb testing.TB, c *Cache, na, nb int) (a, b Seq) {
	tb.Helper()
	s := newSeqs(tb, c, 2, func(i int) []int32 { return toks(100*i, []int{na, nb}[i]) })
	return s[0], s[1]
}

func pagesOf(t *testing.T, s Seq) []int32 {
	t.Helper()
	ids, err := s.Pages(nil)
	require.NoError(t, err)
	return ids
}

func TestAppendTakesPagesAsNeeded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		appends []int
		pages   int
	}{
		{"one token", []int{1}, 1},
		{"a page", []int{4}, 1},
		{"a page and one", []int{5}, 2},
		{"token by token", []int{1, 1, 1, 1, 1}, 2},
		{"fills the last page first", []int{3, 2, 3}, 2},
		{"nothing", []int{0}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newCache(t, WithPages(8))
			s := c.Create()
			n := 0
			for _, k := range tt.appends {
				cached, err := s.Append(toks(1000*n, k))
				require.NoError(t, err)
				assert.Zero(t, cached)
				n += k
			}
			assert.Equal(t, n, s.Len())
			assert.Len(t, pagesOf(t, s), tt.pages)
			st := c.Stats()
			assert.Equal(t, tt.pages, st.Used)
			assert.Equal(t, 8-tt.pages, st.Free)
			assert.Equal(t, uint64(n), st.Tokens)
			require.NoError(t, s.Free())
			assert.Zero(t, c.Stats().Used)
		})
	}
}

func TestAppendRefusesWhatDoesNotFitAndChangesNothing(t *testing.T) {
	c, _, _ := newCache(t, WithPages(3))
	s := c.Create()
	_, err := s.Append(toks(0, 6))
	require.NoError(t, err)
	before := c.Stats()
	_, err = s.Append(toks(100, 7)) // 2 left in page 2, then 2 pages; 1 free
	var np *NoPagesError
	require.ErrorAs(t, err, &np)
	require.ErrorIs(t, err, ErrNoPages)
	assert.Equal(t, NoPagesError{Op: "Append", Seq: s.ID(), Needed: 2, Free: 1}, *np)
	assert.Equal(t, "kvcache: not enough free pages: Append for sequence 0 needs 2 page(s); 1 free", err.Error())
	assert.Equal(t, before, c.Stats())
	assert.Equal(t, 6, s.Len())
	_, err = s.Append(toks(100, 6))
	require.NoError(t, err, "what fits still fits")
}

func TestFreedAndForeignSeqsAreRefused(t *testing.T) {
	c, _, _ := newCache(t, WithPages(2))
	s := c.Create()
	same := s
	require.NoError(t, s.Free())
	for _, err := range []error{func() error { _, err := same.Append(toks(0, 1)); return err }(), same.Free(), func() error { _, err := same.Fork(); return err }()} {
		require.ErrorIs(t, err, ErrFreed)
	}
	again := c.Create()
	assert.Equal(t, s.ID(), again.ID(), "the number is given again")
	_, err := s.Append(toks(0, 1))
	require.ErrorIs(t, err, ErrFreed, "but not the handle")
	var zero Seq
	_, err = zero.Append(toks(0, 1))
	require.ErrorIs(t, err, ErrInvalidSeq)
	assert.Equal(t, -1, zero.ID())
	assert.Zero(t, zero.Len())
}

// fillPage writes b's bytes at the start of page id, through a synchronous copy.
func fillPage(t *testing.T, c *Cache, rt cudart.Runtime, id int32, b []byte) {
	t.Helper()
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(c.PagePtr(id), uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice))
}

func readPage(t *testing.T, c *Cache, rt cudart.Runtime, id int32, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(c.PagePtr(id), uint64(n)), cudart.DeviceToHost))
	return b
}

func TestForkSharesPagesAndCopiesAPartialOneOnWrite(t *testing.T) {
	c, rt, _ := newCache(t, WithPages(8))
	a := c.Create()
	_, err := a.Append(toks(0, 6)) // one full page, one with 2 of 4
	require.NoError(t, err)
	pa := pagesOf(t, a)
	fillPage(t, c, rt, pa[1], []byte("partial page of a"))

	b, err := a.Fork()
	require.NoError(t, err)
	assert.Equal(t, pa, pagesOf(t, b), "a fork holds the same pages")
	assert.Equal(t, 2, c.Stats().Used, "each once")

	_, err = b.Append(toks(6, 1))
	require.NoError(t, err)
	pb := pagesOf(t, b)
	assert.Equal(t, pa[0], pb[0], "the full page stays shared")
	assert.NotEqual(t, pa[1], pb[1], "the partial one is copied before b writes it")
	assert.Equal(t, pa, pagesOf(t, a), "a keeps its pages")
	require.NoError(t, rt.DeviceSynchronize(0))
	assert.Equal(t, []byte("partial page of a"), readPage(t, c, rt, pb[1], 17), "the copy has a's bytes")
	st := c.Stats()
	assert.Equal(t, uint64(1), st.Copies)
	assert.Equal(t, 3, st.Used)
	assert.Equal(t, uint64(6+3), st.Tokens, "the shared page's tokens once")

	_, err = a.Append(toks(6, 1))
	require.NoError(t, err)
	assert.Equal(t, pa, pagesOf(t, a), "a's last page is its own now: no copy")
	assert.Equal(t, uint64(1), c.Stats().Copies)

	require.NoError(t, a.Free())
	assert.Equal(t, 2, c.Stats().Used, "b still holds the full page")
	require.NoError(t, b.Free())
	assert.Zero(t, c.Stats().Used)
}

func TestCopyOnWriteFailureChangesNothing(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	c, _, _ := newCacheOn(t, rt, WithPages(4))
	a := c.Create()
	_, err := a.Append(toks(0, 2))
	require.NoError(t, err)
	b, err := a.Fork()
	require.NoError(t, err)
	before := c.Stats()
	require.NoError(t, rt.FailCall("cudaMemcpyAsync", cudart.ErrInvalidValue.Code))
	_, err = b.Append(toks(2, 1))
	require.ErrorIs(t, err, cudart.ErrInvalidValue)
	assert.Contains(t, err.Error(), "copy-on-write of page")
	assert.Equal(t, before, c.Stats())
	assert.Equal(t, pagesOf(t, a), pagesOf(t, b))
	assert.Equal(t, 2, b.Len())
}

func TestPrefixPagesAreReused(t *testing.T) {
	c, _, _ := newCache(t, WithPages(8))
	prompt := toks(0, 10) // 2 full pages and 2 tokens
	a := c.Create()
	cached, err := a.Append(prompt)
	require.NoError(t, err)
	assert.Zero(t, cached)
	assert.Equal(t, uint64(2), c.Stats().Misses)

	b := c.Create()
	cached, err = b.Append(append(toks(0, 8), 77, 78, 79))
	require.NoError(t, err)
	assert.Equal(t, 8, cached, "the two full pages")
	assert.Equal(t, pagesOf(t, a)[:2], pagesOf(t, b)[:2])
	st := c.Stats()
	assert.Equal(t, uint64(2), st.Hits)
	assert.Equal(t, 4, st.Used)

	require.NoError(t, a.Free())
	require.NoError(t, b.Free())
	st = c.Stats()
	assert.Equal(t, 2, st.Cached, "the full pages stay cached, the partial ones are free")
	assert.Equal(t, 6, st.Free)

	d := c.Create()
	cached, err = d.Append(toks(0, 4))
	require.NoError(t, err)
	assert.Equal(t, 4, cached, "a freed page is found again")

	e := c.Create()
	cached, err = e.Append(append([]int32{-1}, toks(1, 7)...))
	require.NoError(t, err)
	assert.Zero(t, cached, "one token differs: the first page and all after it miss")

	f := c.Create()
	_, err = f.Append(toks(0, 2))
	require.NoError(t, err)
	cached, err = f.Append(toks(2, 6))
	require.NoError(t, err)
	assert.Zero(t, cached, "a sequence that does not end on a page boundary finds nothing")
}

func TestCachedPagesAreEvictedLeastRecentlyFreedFirst(t *testing.T) {
	c, _, _ := newCache(t, WithPages(4))
	a, b := twoSeqs(t, c, 8, 8) // pages a0 a1, b0 b1
	pa, pb := pagesOf(t, a), pagesOf(t, b)
	require.NoError(t, a.Free()) // LRU: a1 a0
	require.NoError(t, b.Free()) // LRU: a1 a0 b1 b0
	assert.Equal(t, Stats{Pages: 4, Cached: 4, Reserved: 4 << 10, Misses: 4}, c.Stats())

	n := c.Create()
	_, err := n.Append(toks(500, 8))
	require.NoError(t, err)
	assert.ElementsMatch(t, []int32{pa[1], pa[0]}, pagesOf(t, n), "a's pages went first, its last page before its first")
	assert.Equal(t, uint64(2), c.Stats().Evictions)

	again := c.Create()
	cached, err := again.Append(toks(100, 8))
	require.NoError(t, err)
	assert.Equal(t, 8, cached, "b's pages are still cached")
	assert.Equal(t, pb, pagesOf(t, again))
	lost := c.Create()
	_, err = lost.Append(toks(0, 4))
	require.ErrorIs(t, err, ErrNoPages, "a's are gone, and no page is left to hold them again")
}

func TestAppendCountsCachedPagesItWouldReuseAsNotFree(t *testing.T) {
	c, _, _ := newCache(t, WithPages(2))
	a := c.Create()
	_, err := a.Append(toks(0, 4))
	require.NoError(t, err)
	require.NoError(t, a.Free()) // one cached, one free
	b := c.Create()
	_, err = b.Append(toks(0, 9)) // reuses the cached page, then needs 2 more
	var np *NoPagesError
	require.ErrorAs(t, err, &np)
	assert.Equal(t, 2, np.Needed)
	assert.Equal(t, 1, np.Free, "the cached page it would reuse is not free for the rest")
	assert.Equal(t, 1, c.Stats().Cached, "and is still cached")
}

// defaultPages is what WithFreeFraction(0.9) makes of room bytes.
func defaultPages(room float64, stride uint64) int {
	return int(uint64(room*0.9) / stride)
}
