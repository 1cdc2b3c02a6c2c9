package kvcache

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/checked"
	"github.com/cudapool/cudapool/pool"
)

// Tables are the page tables of a running batch in device memory, laid out
// for one kernel launch: row i of a [Rows][MaxPages] int32 table holds the
// page ids of the batch's i-th sequence, in token order, and element i of a
// [Rows] int32 array its tokens. Sync brings them up to date on the cache's
// stream, copying only what changed since the last Sync from a pinned
// staging ring: a sequence that stays in its row costs its new page ids, and
// the lengths one copy a step. The entries past a sequence's pages are not
// cleared: a kernel reads only as many as its length needs (see Batch).
//
// Tables belong to the Cache's owner, as the Cache does.
type Tables struct {
	c        *Cache
	rows     int
	maxPages int
	table    cudart.DevicePtr // [rows][maxPages] int32
	lens     cudart.DevicePtr // [rows] int32
	stage    *staging
	closed   bool

	// What the device holds once the copies queued have run; none where
	// it is not known (never written, or a copy refused).
	ids []int32 // [rows][maxPages]
	n   []int32 // [rows]
	who []rowOf

	spans                []span // Sync's plan, kept to spare an allocation a call
	syncs, copies, bytes uint64
}

// rowOf is the sequence a row was last synced for, and how far.
type rowOf struct {
	seq   Seq
	epoch uint32 // the sequence's epoch then: pages rewritten since, if it moved on
	pages int    // its pages then
}

// span is a run of a row's page ids [lo, hi) to copy; row -1 is the lengths.
type span struct{ row, lo, hi int }

// Batch is where Sync left a batch's page tables: what a kernel launch
// over the batch takes as arguments.
//
// A kernel reads row i's first (Lens[i] + PageTokens - 1) / PageTokens
// entries, and no more: the entries past them are not cleared, and hold
// whatever is left there (page ids of a sequence the row held before,
// which may be other sequences' pages now, or whatever the arena held
// before the first Sync), never a marker such as -1. Likewise the rows
// from Rows to the tables' Rows().
type Batch struct {
	Table    cudart.DevicePtr // [Rows][MaxPages] int32: row i holds the page ids of the batch's i-th sequence
	Lens     cudart.DevicePtr // [Rows] int32: the tokens of the batch's i-th sequence; 0 for the zero Seq
	Rows     int              // sequences in the batch
	MaxPages int              // the row stride, in elements
}

// TableStats count what Sync has copied.
type TableStats struct {
	Syncs  uint64 // calls that queued copies
	Copies uint64 // copies queued: one for the lengths and one per row that changed, a Sync
	Bytes  uint64 // bytes copied
}

// NewTables makes page tables for batches of up to rows sequences of up to
// maxPages pages each: the table in the device arena of the Cache's pool,
// the staging ring (twice the table) in its pinned host arena, both
// requested and placed at once, so the pool must not be committed. The
// runtime must have events (cudart.Events), which tell when the staging
// ring's bytes have been copied. Close destroys the events.
//
// An error wraps ErrInvalidOption, ErrReleased, or the pool's error
// (pool.ErrCommitted: make the page tables before Commit).
func (c *Cache) NewTables(rows, maxPages int) (*Tables, error) {
	if err := c.alive("NewTables", -1); err != nil {
		return nil, err
	}
	ev, ok := c.rt.(cudart.Events)
	if !ok {
		return nil, fmt.Errorf("%w: the runtime (%T) has no events (cudart.Events), which the page tables' staging needs", ErrInvalidOption, c.rt)
	}
	if rows <= 0 || maxPages <= 0 || maxPages > maxPages32 {
		return nil, fmt.Errorf("%w: NewTables(%d, %d): want rows > 0 and 0 < maxPages <= %d", ErrInvalidOption, rows, maxPages, maxPages32)
	}
	entries, ok := checked.Mul(uint64(rows), uint64(maxPages))
	if ok {
		entries, ok = checked.Add(entries, uint64(rows))
	}
	size, ok2 := checked.Mul(entries, 4*2)
	if !ok || !ok2 || entries > uint64(maxInt/4) {
		return nil, fmt.Errorf("%w: NewTables(%d, %d): the table's bytes overflow", ErrInvalidOption, rows, maxPages)
	}
	tableBytes := entries * 4
	host, err := c.pool.WantHost(size, pool.Name("kvcache page tables' staging"))
	if errors.Is(err, pool.ErrCommitted) {
		return nil, fmt.Errorf("kvcache: NewTables on a committed pool, whose layout is locked: make the page tables before Commit, with the Cache, or after ReleaseAll with a new Cache: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("kvcache: page tables' staging of %s: %w", bytesize.Format(size), err)
	}
	dev, err := c.pool.WantDevice(tableBytes, pool.Name(fmt.Sprintf("kvcache page tables (%d × %d)", rows, maxPages)))
	if err != nil {
		return nil, fmt.Errorf("kvcache: page tables of %s: %w", bytesize.Format(tableBytes), err)
	}
	if err := c.pool.Satisfy(); err != nil {
		return nil, fmt.Errorf("kvcache: place page tables of %s and their staging of %s: %w", bytesize.Format(tableBytes), bytesize.Format(size), err)
	}
	table, err := dev.Ptr()
	if err != nil {
		return nil, fmt.Errorf("kvcache: %w", err)
	}
	mem, err := host.Bytes()
	if err != nil {
		return nil, fmt.Errorf("kvcache: %w", err)
	}
	stage, err := newStaging(mem, ev, c.streams, c.dev, c.cfg.stream)
	if err != nil {
		return nil, err
	}
	t := &Tables{
		c: c, rows: rows, maxPages: maxPages,
		table: table, lens: table.Add(uint64(rows) * uint64(maxPages) * 4),
		stage: stage,
		ids:   make([]int32, rows*maxPages), n: make([]int32, rows), who: make([]rowOf, rows),
		spans: make([]span, 0, rows+1),
	}
	for i := range t.ids {
		t.ids[i] = none
	}
	for i := range t.n {
		t.n[i] = none
	}
	return t, nil
}

// maxPages32 is the most pages a row holds: the table's offsets are int32
// in kernels.
const maxPages32 = 1 << 24

const maxInt = int(^uint(0) >> 1)

// Rows is the most sequences a batch holds.
func (t *Tables) Rows() int { return t.rows }

// MaxPages is the most pages a sequence in a batch holds.
func (t *Tables) MaxPages() int { return t.maxPages }

// Stats counts what Sync has copied.
func (t *Tables) Stats() TableStats {
	return TableStats{Syncs: t.syncs, Copies: t.copies, Bytes: t.bytes}
}

// Sync lays out batch's page tables, row i for batch[i] (the zero Seq is
// an empty row), and queues the copies that bring the device's to it on
// the cache's stream (WithStream): kernels queued after on that stream read
// them. A row copies only the page ids that differ from what it held at the
// last Sync: for the sequence it held then, the pages taken since; keep a
// sequence in its row from step to step, as a continuous batch does, and a
// decode step copies the lengths and a few new page ids.
//
// The staging bytes are written only where no queued copy still reads
// them; Sync waits for the device only when more than a few Syncs' copies
// are queued and the device has reached none. It allocates nothing of its
// own.
//
// An error wraps ErrInvalidOption (more sequences than Rows, one longer
// than MaxPages pages), ErrFreed, ErrInvalidSeq, ErrSwapped or
// ErrReleased (the pool took back the pages, and the tables with them),
// and changes nothing; or it is the runtime's refusal of a copy, after
// which the rows not copied are copied whole at the next Sync.
func (t *Tables) Sync(batch []Seq) (Batch, error) {
	if t.closed {
		return Batch{}, fmt.Errorf("%w: Sync on closed page tables", ErrInvalidOption)
	}
	if err := t.c.enter("Sync", -1); err != nil {
		return Batch{}, err
	}
	defer t.c.leave()
	if len(batch) > t.rows {
		return Batch{}, fmt.Errorf("%w: a batch of %d sequences; the page tables hold %d", ErrInvalidOption, len(batch), t.rows)
	}
	spans, need, err := t.plan(batch)
	if err != nil {
		return Batch{}, err
	}
	b := Batch{Table: t.table, Lens: t.lens, Rows: len(batch), MaxPages: t.maxPages}
	if need == 0 {
		return b, nil
	}
	off, err := t.stage.reserve(need)
	if err != nil {
		return Batch{}, err
	}
	at := off
	var copyErr error
	for _, sp := range spans {
		if copyErr = t.copySpan(batch, sp, at); copyErr != nil {
			break
		}
		at += uint64(sp.hi-sp.lo) * 4
	}
	if at > off {
		t.syncs++
		if err := t.stage.queued(off, at-off); err != nil && copyErr == nil {
			copyErr = err
		}
	}
	if copyErr != nil {
		return Batch{}, copyErr
	}
	return b, nil
}

// plan is the spans Sync copies, the lengths first, and their bytes; it
// changes nothing.
func (t *Tables) plan(batch []Seq) ([]span, uint64, error) {
	spans := t.spans[:0]
	lo, hi := len(batch), 0
	var need uint64
	for i, s := range batch {
		st, err := t.state(s)
		if err != nil {
			return nil, 0, fmt.Errorf("%w (batch[%d])", err, i)
		}
		var pages []int32
		n := int32(0)
		if st != nil {
			pages, n = st.pages, int32(st.n)
		}
		if len(pages) > t.maxPages {
			return nil, 0, fmt.Errorf("%w: batch[%d] (%v) holds %d pages; the page tables' rows hold %d", ErrInvalidOption, i, s, len(pages), t.maxPages)
		}
		if n != t.n[i] {
			lo, hi = min(lo, i), i+1
		}
		from := 0
		if w := t.who[i]; s != (Seq{}) && w.seq == s && w.epoch == st.epoch {
			from = w.pages
		}
		row := t.ids[i*t.maxPages : i*t.maxPages+len(pages)]
		a, b := from, len(pages)
		for a < b && row[a] == pages[a] {
			a++
		}
		for b > a && row[b-1] == pages[b-1] {
			b--
		}
		if a < b {
			spans = append(spans, span{row: i, lo: a, hi: b})
			need += uint64(b-a) * 4
		}
	}
	if lo < hi {
		spans = append(spans, span{row: -1, lo: lo, hi: hi})
		need += uint64(hi-lo) * 4
	}
	t.spans = spans
	return spans, need, nil
}

// state is s's state, nil for the zero Seq.
func (t *Tables) state(s Seq) (*seqState, error) {
	if s == (Seq{}) {
		return nil, nil
	}
	if s.c != t.c {
		return nil, fmt.Errorf("%w: %v is not of this cache", ErrInvalidSeq, s)
	}
	return s.live()
}

// copySpan writes sp's values at staging offset off and queues their copy,
// and records them as the device's once queued. If the copy is refused
// the values are recorded as unknown (none), to be copied again.
func (t *Tables) copySpan(batch []Seq, sp span, off uint64) error {
	var src []int32
	var dst cudart.DevicePtr
	if sp.row < 0 {
		for i := sp.lo; i < sp.hi; i++ {
			t.n[i] = int32(batch[i].Len())
		}
		src, dst = t.n[sp.lo:sp.hi], t.lens.Add(uint64(sp.lo)*4)
	} else {
		st, _ := t.state(batch[sp.row])
		src = t.ids[sp.row*t.maxPages+sp.lo : sp.row*t.maxPages+sp.hi]
		copy(src, st.pages[sp.lo:sp.hi])
		dst = t.table.Add(uint64(sp.row*t.maxPages+sp.lo) * 4)
		t.who[sp.row] = rowOf{seq: batch[sp.row], epoch: st.epoch, pages: len(st.pages)}
	}
	mem := t.stage.mem[off : off+uint64(len(src))*4]
	for i, v := range src {
		binary.LittleEndian.PutUint32(mem[4*i:], uint32(v))
	}
	if err := t.c.streams.MemcpyAsync(t.c.dev, cudart.DeviceMem(dst, uint64(len(mem))), cudart.HostMem(mem), cudart.HostToDevice, t.c.cfg.stream); err != nil {
		for i := range src {
			src[i] = none
		}
		if sp.row >= 0 {
			t.who[sp.row] = rowOf{}
		}
		return fmt.Errorf("kvcache: copy %s of page tables: %w", bytesize.Exact(uint64(len(mem))), err)
	}
	t.copies++
	t.bytes += uint64(len(mem))
	return nil
}

// Close destroys the events of the staging ring; the table and the ring
// are the pool's, freed by its ReleaseAll or Close. Sync is refused after.
// Close is idempotent.
func (t *Tables) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return t.stage.close()
}
