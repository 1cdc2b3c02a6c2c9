package kvcache

import (
	"errors"
	"fmt"
	"math"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/streamdev"
	"github.com/cudapool/cudapool/pool"
)

// maxPages is the most pages a Cache holds: page ids are int32 in the page
// tables kernels read, and -1 means none.
const maxPages = math.MaxInt32 - 1

// none is the page id of no page.
const none int32 = -1

// Cache is a paged KV cache: fixed-size pages in one buffer of a pool's
// device arena, handed to sequences as they grow.
//
// A Cache is not safe for concurrent use: it and its Seqs belong to one
// goroutine at a time (the scheduler's), as vLLM's block manager does.
type Cache struct {
	rt      cudart.Runtime
	pool    *pool.Pool
	streams cudart.Streams
	dev     int
	cfg     config
	layout  Layout

	tokenBytes, pageBytes uint64
	stride                uint64 // pageBytes rounded up to 256, the distance between pages
	buf                   *pool.Buffer
	base                  cudart.DevicePtr
	n                     int32

	// Per page, by id.
	ref    []int32  // sequences holding the page
	fill   []int32  // tokens written in it
	hashed []bool   // its contents are in index: full, and first with that prefix
	hash   []uint64 // its prefix hash, when hashed
	parent []uint64 // the prefix hash of the page before it, when hashed
	prev   []int32  // neighbours in the LRU list, when cached and held by none
	next   []int32
	toks   []int32 // the token ids it holds, PageTokens a page

	free       []int32 // pages neither held nor cached, a stack
	head, tail int32   // the LRU list of cached pages no sequence holds, least recent at head
	lruLen     int

	index map[uint64]int32 // prefix hash -> the full page holding it

	seqs     []seqState
	freeSeqs []int32
	scratch  []int32 // Append's prefix hits and SwapIn's pages, kept to spare an allocation a call
	copied   []int   // SwapIn's pages copied back, likewise

	// The swap space (swap.go): host pages in the pool's pinned arena, a
	// stack of the free ones, and the token ids of each.
	swapBuf  []byte
	swapFree []int32
	swapToks []int32

	held                            int    // pages held by a sequence
	filled                          uint64 // tokens in held pages, each page once
	hits, misses, copies, evictions uint64
	swapped                         int // host pages holding swapped-out sequences
	swapOuts, swapIns, swapHits     uint64

	pub published // for Var's readers

	// The memory tool's view (annotate.go): whether one listens, and the
	// sequences Scope narrowed it to.
	annotated bool
	scoped    bool
	scope     []Seq
}

// New makes a Cache of layout l whose pages are one buffer of p's device
// arena. rt must be the runtime p was made with, and have streams
// (cudart.Streams) for the copies the cache queues. The buffer is requested
// and placed at once (p.Satisfy, which places any other request queued
// too), so p must not be committed: make the Cache after requesting the
// model's buffers, which WithFreeFraction then sizes it around, and before
// Commit. The buffer lives until p's ReleaseAll or Close; every call of
// the Cache that can fail refuses after, with ErrReleased: make a new one.
//
// An error wraps ErrInvalidLayout, ErrInvalidOption (an option out of
// range, a stream CUDA does not know), or the pool's error
// (pool.ErrExhausted, pool.ErrCommitted, ...).
func New(rt cudart.Runtime, p *pool.Pool, l Layout, opts ...Option) (*Cache, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	pageBytes, err := l.PageBytes()
	if err != nil {
		return nil, err
	}
	stride, err := align.Up(pageBytes, align.CUDA)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: a page of %s does not round up to 256 B", ErrInvalidLayout, l, bytesize.Exact(pageBytes))
	}
	streams, ok := rt.(cudart.Streams)
	if !ok {
		return nil, fmt.Errorf("%w: the runtime (%T) has no streams (cudart.Streams), which the cache's copies need", ErrInvalidOption, rt)
	}
	if p == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrInvalidOption)
	}
	if err := checkStream(streams, p.Device(), cfg.stream); err != nil {
		return nil, err
	}
	pages, err := cfg.pagesFor(rt, p, stride)
	if err != nil {
		return nil, err
	}
	tokenBytes, _ := l.TokenBytes()
	buf, err := p.WantDevice(uint64(pages)*stride, pool.Name(fmt.Sprintf("kvcache pages (%d × %s)", pages, bytesize.Format(stride))), pool.SubAllocated())
	if errors.Is(err, pool.ErrCommitted) {
		return nil, fmt.Errorf("kvcache: New on a committed pool, whose layout is locked: create the Cache before Commit (after the model's buffers are requested), or after ReleaseAll: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("kvcache: %d pages of %s: %w", pages, bytesize.Format(stride), err)
	}
	var swap *pool.Buffer
	if cfg.swap > 0 {
		swap, err = p.WantHost(uint64(cfg.swap)*stride, pool.Name(fmt.Sprintf("kvcache swap space (%d × %s)", cfg.swap, bytesize.Format(stride))))
		if err != nil {
			return nil, fmt.Errorf("kvcache: swap space of %d pages of %s: %w", cfg.swap, bytesize.Format(stride), err)
		}
	}
	if err := p.Satisfy(); err != nil {
		return nil, fmt.Errorf("kvcache: place %d pages of %s: %w", pages, bytesize.Format(stride), err)
	}
	base, err := buf.Ptr()
	if err != nil {
		return nil, fmt.Errorf("kvcache: %w", err)
	}
	var swapBuf []byte
	if swap != nil {
		if swapBuf, err = swap.Bytes(); err != nil {
			return nil, fmt.Errorf("kvcache: %w", err)
		}
	}
	c := &Cache{
		rt: rt, pool: p, streams: streams, dev: p.Device(), cfg: cfg, layout: l,
		tokenBytes: tokenBytes, pageBytes: pageBytes, stride: stride,
		buf: buf, base: base, n: int32(pages),
		ref: make([]int32, pages), fill: make([]int32, pages),
		hashed: make([]bool, pages), hash: make([]uint64, pages), parent: make([]uint64, pages),
		prev: make([]int32, pages), next: make([]int32, pages),
		toks: make([]int32, pages*l.PageTokens),
		free: make([]int32, pages),
		head: none, tail: none,
		index:   make(map[uint64]int32, pages),
		swapBuf: swapBuf, swapFree: make([]int32, cfg.swap), swapToks: make([]int32, cfg.swap*l.PageTokens),
		annotated: toolListens(rt, p.Device()),
	}
	// Page 0 on top of the stack: the first pages taken are the lowest.
	for i := range c.free {
		c.free[i] = int32(pages - 1 - i)
	}
	for i := range c.swapFree {
		c.swapFree[i] = int32(cfg.swap - 1 - i)
	}
	return c, nil
}

// checkStream refuses a stream given to WithStream that the runtime does
// not know, or that is another device's, rather than let the first copy
// fail. cudaStreamGetDevice tells both without queueing anything on the
// stream. Before CUDA 12.8 a stream the binding did not make cannot be
// checked, and is taken.
func checkStream(streams cudart.Streams, dev int, s cudart.Stream) error {
	if s == 0 {
		return nil
	}
	d, known, err := streamdev.Of(streams, dev, s)
	switch {
	case !known:
		return nil
	case errors.Is(err, cudart.ErrInvalidResourceHandle):
		return fmt.Errorf("%w: WithStream(%#x): CUDA does not know the stream (never created, or destroyed); give one StreamCreate made on device %d: %w", ErrInvalidOption, uintptr(s), dev, err)
	case err != nil:
		return fmt.Errorf("%w: WithStream(%#x): the runtime refused the stream: %w", ErrInvalidOption, uintptr(s), err)
	case d != dev:
		return fmt.Errorf("%w: WithStream(%#x): the stream is device %d's; the pool's pages are device %d's: give one of device %d", ErrInvalidOption, uintptr(s), d, dev, dev)
	}
	return nil
}

// alive refuses a call once the pool has taken the pages back: the pool
// refuses the page buffer's handle from its ReleaseAll, Close or a reset
// of the device on, when the bytes may be another buffer's. It asks the
// pool each time (Buffer.Placed, which reads atomics and takes no lock
// while the buffer is placed): the pool is safe for concurrent use, and
// another goroutine may release it between two calls of the Cache's
// owner. what is the call, seq its sequence or -1.
func (c *Cache) alive(what string, seq int32) error {
	if err := c.buf.Placed(); err != nil {
		return released(what, seq, err)
	}
	return nil
}

// enter is alive, and holds the pool's ReleaseAll and Close off until
// leave (pool's Buffer.Use): around the writes into the pool's memory,
// on the host or queued on the cache's stream, so that a release from
// another goroutine comes after them. Between the two the Cache calls
// nothing of the pool (no annotation), which a release would wait for
// with its lock held.
func (c *Cache) enter(what string, seq int32) error {
	if err := c.buf.Use(); err != nil {
		return released(what, seq, err)
	}
	return nil
}

// leave ends the hold enter took.
func (c *Cache) leave() { c.buf.Done() }

// released is alive's refusal of call what of sequence seq (or -1), the
// pool having refused the page buffer with err.
func released(what string, seq int32, err error) error {
	if seq >= 0 {
		what = fmt.Sprintf("%s of seq %d", what, seq)
	}
	return fmt.Errorf("%w: %s: the pool took the pages back (%w); make a new Cache with New", ErrReleased, what, err)
}

// pagesFor is the number of pages the options ask for, in p's device arena.
func (cfg config) pagesFor(rt cudart.Runtime, p *pool.Pool, stride uint64) (int, error) {
	var n uint64
	switch {
	case cfg.pages > 0:
		n = uint64(cfg.pages)
	case cfg.bytes > 0:
		n = cfg.bytes / stride
	default:
		room, err := room(rt, p)
		if err != nil {
			return 0, err
		}
		n = uint64(float64(room)*cfg.fraction) / stride
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: the page arena holds no page of %s", ErrInvalidOption, bytesize.Exact(stride))
	}
	return int(min(n, maxPages)), nil
}

// room is what p's device arena can still give after the buffers placed
// and queued: its unused bytes, and on a growable arena (mapped less than
// its address space) no more than the memory it has mapped and not used
// plus the device's free memory, since every byte placed there is mapped.
func room(rt cudart.Runtime, p *pool.Pool) (uint64, error) {
	d := p.Stats().Device
	taken := d.Used + d.Pending
	if d.Pending == math.MaxUint64 || taken < d.Used || taken >= d.Capacity {
		return 0, nil
	}
	r := d.Capacity - taken
	if d.Mapped == d.Capacity {
		return r, nil
	}
	free, _, err := rt.MemGetInfo(p.Device())
	if err != nil {
		return 0, fmt.Errorf("kvcache: the device's free memory, for WithFreeFraction on a growable arena: %w", err)
	}
	if taken > d.Mapped {
		free -= min(free, taken-d.Mapped)
	} else {
		free += d.Mapped - taken
	}
	return min(r, free), nil
}

// Layout is the layout the Cache was made with.
func (c *Cache) Layout() Layout { return c.layout }

// Pages is the number of pages in the arena.
func (c *Cache) Pages() int { return int(c.n) }

// PageBytes is the bytes of one page; pages are PageStride bytes apart.
func (c *Cache) PageBytes() uint64 { return c.pageBytes }

// PageStride is the distance between two pages: PageBytes rounded up to 256.
func (c *Cache) PageStride() uint64 { return c.stride }

// Base is the device address of page 0; page i is at Base + i × PageStride.
func (c *Cache) Base() cudart.DevicePtr { return c.base }

// PagePtr is the device address of page id.
func (c *Cache) PagePtr(id int32) cudart.DevicePtr {
	return c.base.Add(uint64(id) * c.stride)
}

// take gives a page to one sequence: a free one if there is one, else the
// least recently used cached page, whose prefix is forgotten. ok is false
// when neither is left.
func (c *Cache) take() (id int32, ok bool) {
	if k := len(c.free); k > 0 {
		id = c.free[k-1]
		c.free = c.free[:k-1]
	} else if c.head != none {
		id = c.head
		c.unlink(id)
		c.forget(id)
		c.evictions++
	} else {
		return none, false
	}
	c.ref[id] = 1
	c.held++
	return id, true
}

// put drops one sequence's hold on page id. A page no one holds goes to
// the LRU list if its prefix is cached, else back to the free stack.
func (c *Cache) put(id int32) {
	if c.ref[id]--; c.ref[id] > 0 {
		return
	}
	c.held--
	c.filled -= uint64(c.fill[id])
	if c.hashed[id] {
		c.pushLRU(id)
		return
	}
	c.fill[id] = 0
	c.free = append(c.free, id)
}

// hold adds a hold on page id, which is held already or cached.
func (c *Cache) hold(id int32) {
	if c.ref[id] == 0 {
		c.unlink(id)
		c.held++
		c.filled += uint64(c.fill[id])
	}
	c.ref[id]++
}

// forget drops page id's prefix from the index, its contents about to be
// overwritten.
func (c *Cache) forget(id int32) {
	if c.hashed[id] {
		if c.index[c.hash[id]] == id {
			delete(c.index, c.hash[id])
		}
		c.hashed[id] = false
	}
	c.fill[id] = 0
}

func (c *Cache) pushLRU(id int32) {
	c.prev[id], c.next[id] = c.tail, none
	if c.tail != none {
		c.next[c.tail] = id
	} else {
		c.head = id
	}
	c.tail = id
	c.lruLen++
}

func (c *Cache) unlink(id int32) {
	p, n := c.prev[id], c.next[id]
	if p != none {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n != none {
		c.prev[n] = p
	} else {
		c.tail = p
	}
	c.prev[id], c.next[id] = none, none
	c.lruLen--
}

// available is the pages a sequence could take now: the free ones and the
// cached ones no sequence holds.
func (c *Cache) available() int { return len(c.free) + c.lruLen }
