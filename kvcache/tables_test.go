package kvcache

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// newTables is a Cache of small's pages and page tables of rows × maxPages
// on a pool with a pinned arena for the staging, on rt.
func newTables(t *testing.T, rt cudart.Full, pages, rows, maxPages int) (*Cache, *Tables) {
	t.Helper()
	p, err := pool.New(rt, pool.WithDeviceBytes(4<<20), pool.WithHostBytes(1<<20))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	c, err := New(rt, p, small, WithPages(pages))
	require.NoError(t, err)
	tb, err := c.NewTables(rows, maxPages)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tb.Close()) })
	return c, tb
}

// readInt32s reads n int32 from the device at p, once the stream's work is done.
func readInt32s(t *testing.T, rt cudart.Runtime, p cudart.DevicePtr, n int) []int32 {
	t.Helper()
	require.NoError(t, rt.DeviceSynchronize(0))
	b := make([]byte, 4*n)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(p, uint64(len(b))), cudart.DeviceToHost))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// checkTables holds the device's tables of b to batch's pages and lengths.
func checkTables(t *testing.T, rt cudart.Runtime, batch []Seq, b Batch) {
	t.Helper()
	require.Equal(t, len(batch), b.Rows)
	table := readInt32s(t, rt, b.Table, b.Rows*b.MaxPages)
	lens := readInt32s(t, rt, b.Lens, b.Rows)
	for i, s := range batch {
		want := []int32{}
		if s != (Seq{}) {
			want = pagesOf(t, s)
		}
		assert.Equal(t, int32(s.Len()), lens[i], "row %d's length (%v)", i, s)
		assert.Equal(t, want, table[i*b.MaxPages:i*b.MaxPages+len(want)], "row %d's pages (%v)", i, s)
	}
}

func TestTablesFollowTheSequences(t *testing.T) {
	rt := cudarttest.Open(t)
	c, tb := newTables(t, rt, 32, 4, 8)
	a, b := twoSeqs(t, c, 6, 3)
	sync := func(batch ...Seq) {
		t.Helper()
		bt, err := tb.Sync(batch)
		require.NoError(t, err)
		checkTables(t, rt, batch, bt)
	}
	sync(a, b)

	_, err := a.Append(toks(6, 3)) // a takes a third page
	require.NoError(t, err)
	sync(a, b)

	f, err := a.Fork() // shares a's pages
	require.NoError(t, err)
	sync(a, b, f)
	_, err = f.Append(toks(9, 1)) // copies the shared partial page on write
	require.NoError(t, err)
	require.NotEqual(t, pagesOf(t, a)[2], pagesOf(t, f)[2])
	sync(a, b, f)

	require.NoError(t, b.Free()) // b's row goes to another sequence
	d := c.Create()
	_, err = d.Append(toks(0, 8)) // a's first two pages, by prefix
	require.NoError(t, err)
	sync(a, d, f)
	sync(f, Seq{}, a, d) // rows change places; the zero Seq is an empty row
	sync()

	_, err = tb.Sync([]Seq{a, b})
	require.ErrorIs(t, err, ErrFreed)
	_, err = tb.Sync(make([]Seq, 5))
	require.ErrorIs(t, err, ErrInvalidOption)
	long := c.Create()
	_, err = long.Append(toks(500, 8*small.PageTokens+1))
	require.NoError(t, err)
	_, err = tb.Sync([]Seq{long})
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "holds 9 pages; the page tables' rows hold 8")
}

// TestTablesCopyOnlyWhatChanged: a decode step that fills no page copies
// the lengths alone; one that takes pages adds a copy of 4 B per row that
// took one; a row given to another sequence copies only the ids that
// differ.
func TestTablesCopyOnlyWhatChanged(t *testing.T) {
	rt := cudarttest.Open(t)
	c, tb := newTables(t, rt, 64, 8, 16)
	batch := newSeqs(t, c, 8, func(i int) []int32 { return toks(1000*i, 5) }) // 2 pages, room for 3 more tokens
	_, err := tb.Sync(batch)
	require.NoError(t, err)
	assert.Equal(t, TableStats{Syncs: 1, Copies: 8 + 1, Bytes: 8*2*4 + 8*4}, tb.Stats())

	step := func() TableStats {
		before := tb.Stats()
		for i, s := range batch {
			_, err := s.Append([]int32{int32(i)})
			require.NoError(t, err)
		}
		bt, err := tb.Sync(batch)
		require.NoError(t, err)
		checkTables(t, rt, batch, bt)
		after := tb.Stats()
		return TableStats{Syncs: after.Syncs - before.Syncs, Copies: after.Copies - before.Copies, Bytes: after.Bytes - before.Bytes}
	}
	assert.Equal(t, TableStats{Syncs: 1, Copies: 1, Bytes: 8 * 4}, step(), "6 tokens: the lengths")
	step()
	step()
	assert.Equal(t, TableStats{Syncs: 1, Copies: 1 + 8, Bytes: 8*4 + 8*4}, step(), "9 tokens: a page each")

	_, err = tb.Sync(batch)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), tb.Stats().Syncs, "nothing changed: nothing copied")

	f, err := batch[1].Fork()
	require.NoError(t, err)
	_, err = f.Append([]int32{-1}) // copies the last of its 3 pages on write
	require.NoError(t, err)
	batch[1] = f
	before := tb.Stats()
	bt, err := tb.Sync(batch)
	require.NoError(t, err)
	checkTables(t, rt, batch, bt)
	assert.Equal(t, uint64(2), tb.Stats().Copies-before.Copies, "row 1 and the lengths")
	assert.Equal(t, uint64(4+4), tb.Stats().Bytes-before.Bytes, "the one id that differs and row 1's length")
}

// TestTablesStagingIsNotOverwrittenBeforeItIsCopied: many Syncs queued
// ahead of the device, each rewriting every row, each followed by a copy of
// the table as a kernel would read it: every snapshot is the table of its
// own step, although the staging ring wraps and its events run out.
func TestTablesStagingIsNotOverwrittenBeforeItIsCopied(t *testing.T) {
	rt := cudarttest.Open(t)
	c, tb := newTables(t, rt, 64, 4, 4)
	seqs := newSeqs(t, c, 4, func(i int) []int32 { return toks(100*i, 4*small.PageTokens) })
	const steps = 3 * stagingEvents
	tableBytes := uint64(4 * 4 * 4)
	snaps, err := rt.Malloc(0, steps*tableBytes)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Free(0, snaps)) }()
	want := make([][]int32, steps)
	for k := range steps {
		batch := make([]Seq, 4)
		for i := range batch {
			batch[i] = seqs[(i+k)%4] // every row changes sequence
		}
		bt, err := tb.Sync(batch)
		require.NoError(t, err)
		require.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(snaps.Add(uint64(k)*tableBytes), tableBytes), cudart.DeviceMem(bt.Table, tableBytes), cudart.DeviceToDevice, 0))
		for _, s := range batch {
			want[k] = append(want[k], pagesOf(t, s)...)
		}
	}
	got := readInt32s(t, rt, snaps, steps*16)
	for k := range steps {
		assert.Equal(t, want[k], got[k*16:(k+1)*16], "step %d", k)
	}
}

// TestTablesRefuseACopyAndCopyAgain: a copy the runtime refuses (the
// row's, then the lengths') fails Sync, and the next Sync copies it again.
func TestTablesRefuseACopyAndCopyAgain(t *testing.T) {
	for _, tt := range []struct {
		nth  int
		what string
	}{{1, "copy 8 B of page tables"}, {2, "copy 4 B of page tables"}} {
		t.Run(tt.what, func(t *testing.T) {
			rt := cudarttest.NewFakeT(t)
			c, tb := newTables(t, rt, 16, 2, 4)
			a := c.Create()
			_, err := a.Append(toks(0, 5))
			require.NoError(t, err)
			require.NoError(t, rt.FailCallNth("cudaMemcpyAsync", tt.nth, cudart.ErrInvalidValue.Code))
			_, err = tb.Sync([]Seq{a})
			require.ErrorIs(t, err, cudart.ErrInvalidValue)
			assert.Contains(t, err.Error(), tt.what)
			bt, err := tb.Sync([]Seq{a})
			require.NoError(t, err)
			checkTables(t, rt, []Seq{a}, bt)
		})
	}
}

func TestNewTablesRefuses(t *testing.T) {
	c, _, _ := newCache(t, WithPages(4))
	for _, tt := range []struct {
		name           string
		rows, maxPages int
		err            error
	}{
		{"no rows", 0, 4, ErrInvalidOption},
		{"no pages", 4, 0, ErrInvalidOption},
		{"overflow", maxInt, maxPages32, ErrInvalidOption},
		{"more than the pinned arena", 1024, 1024, pool.ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.NewTables(tt.rows, tt.maxPages)
			require.ErrorIs(t, err, tt.err)
		})
	}
}

// BenchmarkTablesDecodeStep is a decode step's page tables: one token
// appended to each of 64 sequences, then Sync, which copies the lengths
// and, every PageTokens steps, a page id per sequence. On the fake the
// allocations are the fake's copies' and events' (a memory profile shows
// none in this package).
func BenchmarkTablesDecodeStep(b *testing.B) {
	c := newBenchCache(b, 4096)
	tb, err := c.NewTables(64, 64)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, tb.Close()) })
	seqs := newSeqs(b, c, 64, nil)
	tok := []int32{7}
	b.ReportAllocs()
	for b.Loop() {
		for i, s := range seqs {
			if s.Len() == 64*small.PageTokens {
				require.NoError(b, s.Free())
				seqs[i] = c.Create()
				s = seqs[i]
			}
			if _, err := s.Append(tok); err != nil {
				b.Fatal(err)
			}
			tok[0]++
		}
		if _, err := tb.Sync(seqs); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, c.rt.DeviceSynchronize(0))
}

// A batch holding another cache's sequence is refused naming its place in
// the batch, the package's prefix said once.
func TestSyncNamesTheForeignSequencesPlace(t *testing.T) {
	rt := cudarttest.Open(t)
	_, tb := newTables(t, rt, 8, 2, 4)
	other, _ := newTables(t, rt, 8, 2, 4)
	_, err := tb.Sync([]Seq{other.Create()})
	require.ErrorIs(t, err, ErrInvalidSeq)
	assert.Equal(t, 1, strings.Count(err.Error(), "kvcache:"), err.Error())
	assert.Contains(t, err.Error(), "(batch[0])")
}
