package kvcache_test

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/kvcache"
	"github.com/cudapool/cudapool/pool"
)

// A cache of pages after the model's weights: two requests share a system
// prompt's pages, and a third does not fit.
func Example() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	if _, err := p.WantDevice(32<<20, pool.Name("weights")); err != nil {
		fmt.Println(err)
		return
	}
	layout := kvcache.Layout{Layers: 4, KVHeads: 4, HeadDim: 64, DType: kvcache.FP16, PageTokens: 16}
	c, err := kvcache.New(rt, p, layout, kvcache.WithPages(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d pages of %d KiB\n", c.Pages(), c.PageBytes()>>10)

	system := make([]int32, 32) // two pages of system prompt
	for i := range system {
		system[i] = int32(i)
	}
	a, b := c.Create(), c.Create()
	cached, _ := a.Append(append(system, 100, 101, 102))
	fmt.Println("a: cached tokens:", cached)
	cached, _ = b.Append(append(system, 200, 201))
	fmt.Println("b: cached tokens:", cached)

	st := c.Stats()
	fmt.Printf("pages used %d, free %d; hits %d; utilization %.2f\n", st.Used, st.Free, st.Hits, st.Utilization)

	_, err = c.Create().Append(make([]int32, 100))
	var np *kvcache.NoPagesError
	if errors.As(err, &np) {
		fmt.Printf("refused: needs %d pages, %d free\n", np.Needed, np.Free)
	}
	// Output:
	// 8 pages of 64 KiB
	// a: cached tokens: 0
	// b: cached tokens: 32
	// pages used 4, free 4; hits 2; utilization 0.29
	// refused: needs 7 pages, 4 free
}

// Page tables for a kernel: a batch's page ids and lengths in device
// memory, copied from a pinned staging ring only where they changed.
func ExampleTables() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(16<<20), pool.WithHostBytes(1<<20))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	layout := kvcache.Layout{Layers: 2, KVHeads: 2, HeadDim: 64, DType: kvcache.FP16, PageTokens: 16}
	c, err := kvcache.New(rt, p, layout, kvcache.WithPages(64))
	if err != nil {
		fmt.Println(err)
		return
	}
	tables, err := c.NewTables(8, 32) // batches of up to 8 sequences of up to 32 pages
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tables.Close()
	batch := []kvcache.Seq{c.Create(), c.Create()}
	for step := range 20 {
		for _, s := range batch {
			if _, err := s.Append([]int32{int32(step)}); err != nil {
				fmt.Println(err)
				return
			}
		}
		b, err := tables.Sync(batch)
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = b // a kernel launch takes b.Table, b.Lens, b.Rows and b.MaxPages
	}
	st := tables.Stats()
	fmt.Printf("%d syncs, %d copies, %d B\n", st.Syncs, st.Copies, st.Bytes)
	// Output:
	// 20 syncs, 24 copies, 176 B
}

// A sequence preempted to the pinned host arena and brought back.
func ExampleSeq_SwapOut() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(16<<20), pool.WithHostBytes(1<<20))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	layout := kvcache.Layout{Layers: 2, KVHeads: 2, HeadDim: 64, DType: kvcache.FP16, PageTokens: 16}
	c, err := kvcache.New(rt, p, layout, kvcache.WithPages(4), kvcache.WithSwap(4))
	if err != nil {
		fmt.Println(err)
		return
	}
	a := c.Create()
	if _, err := a.Append(make([]int32, 40)); err != nil { // 3 pages
		fmt.Println(err)
		return
	}
	if err := a.SwapOut(); err != nil {
		fmt.Println(err)
		return
	}
	st := c.Stats()
	fmt.Printf("swapped out: %d pages on the host, %d in use on the device\n", st.Swapped, st.Used)
	if err := a.SwapIn(); err != nil {
		fmt.Println(err)
		return
	}
	// Its two full pages were still cached on the device: only the last
	// one is copied back.
	st = c.Stats()
	fmt.Printf("swapped in: %d tokens in %d pages; %d pages out, %d in, %d found on the device\n", a.Len(), st.Used, st.SwapOuts, st.SwapIns, st.SwapHits)
	// Output:
	// swapped out: 3 pages on the host, 0 in use on the device
	// swapped in: 40 tokens in 3 pages; 3 pages out, 1 in, 2 found on the device
}

// newExampleCache is a cache of pages on a fresh fake pool for the
// examples: pages of 16 tokens of 2 layers × 2 KV heads × 64 dims in FP16
// (16 KiB), a pinned host arena for page tables and swap space.
func newExampleCache(opts ...kvcache.Option) (*kvcache.Cache, cudart.Full, func() error, error) {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(16<<20), pool.WithHostBytes(1<<20))
	if err != nil {
		return nil, nil, nil, err
	}
	layout := kvcache.Layout{Layers: 2, KVHeads: 2, HeadDim: 64, DType: kvcache.FP16, PageTokens: 16}
	c, err := kvcache.New(rt, p, layout, opts...)
	if err != nil {
		return nil, nil, nil, errors.Join(err, p.Close())
	}
	return c, rt, p.Close, nil
}

// A sequence's life: created, appended to (a page taken every 16 tokens),
// forked (every page shared, counted by reference), the fork's next token
// copying the partial page they share (copy-on-write), and both freed.
func ExampleSeq_Fork() {
	c, _, done, err := newExampleCache(kvcache.WithPages(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	a := c.Create()
	if _, err := a.Append(make([]int32, 20)); err != nil { // a full page and 4 tokens
		fmt.Println(err)
		return
	}
	pa, _ := a.Pages(nil)
	fmt.Println("a:", a.Len(), "tokens in pages", pa)

	b, err := a.Fork()
	if err != nil {
		fmt.Println(err)
		return
	}
	pb, _ := b.Pages(nil)
	fmt.Println("b:", b.Len(), "tokens in pages", pb, "- pages used:", c.Stats().Used)

	if _, err := b.Append([]int32{7}); err != nil {
		fmt.Println(err)
		return
	}
	pb, _ = b.Pages(nil)
	fmt.Println("b:", b.Len(), "tokens in pages", pb, "- copies:", c.Stats().Copies)

	if err := errors.Join(a.Free(), b.Free()); err != nil {
		fmt.Println(err)
		return
	}
	_, err = a.Append([]int32{1})
	fmt.Println("freed:", errors.Is(err, kvcache.ErrFreed), "- pages used:", c.Stats().Used)
	// Output:
	// a: 20 tokens in pages [0 1]
	// b: 20 tokens in pages [0 1] - pages used: 2
	// b: 21 tokens in pages [0 2] - copies: 1
	// freed: true - pages used: 0
}

// Prefix caching: a second request with the same system prompt reuses its
// full pages. Append counts what it found in tokens (compute the keys and
// values of tokens[cached:] only); Stats counts the same in pages.
func ExampleSeq_Append() {
	c, _, done, err := newExampleCache(kvcache.WithPages(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	system := make([]int32, 40) // two full pages and 8 tokens
	for i := range system {
		system[i] = int32(i)
	}
	for _, question := range [][]int32{{1000, 1001}, {2000}} {
		s := c.Create()
		cached, err := s.Append(append(system, question...))
		if err != nil {
			fmt.Println(err)
			return
		}
		st := c.Stats()
		fmt.Printf("cached %d of %d tokens; hits %d, misses %d pages\n", cached, s.Len(), st.Hits, st.Misses)
	}
	// Output:
	// cached 0 of 42 tokens; hits 0, misses 2 pages
	// cached 32 of 41 tokens; hits 2, misses 2 pages
}

// Page tables read back as a kernel reads them: row i holds the page ids
// of the batch's i-th sequence, and a kernel reads only as many of them
// as Lens[i] tokens need (the entries past them are not cleared).
func ExampleTables_Sync() {
	c, rt, done, err := newExampleCache(kvcache.WithPages(16))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	tables, err := c.NewTables(2, 4) // 2 rows of 4 page ids
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tables.Close()
	a, b := c.Create(), c.Create()
	if _, err := a.Append(make([]int32, 40)); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := b.Append(make([]int32, 5)); err != nil {
		fmt.Println(err)
		return
	}
	batch, err := tables.Sync([]kvcache.Seq{a, b})
	if err != nil {
		fmt.Println(err)
		return
	}
	// What a kernel queued after Sync on the cache's stream reads: here,
	// copied back once the copies are done.
	if err := rt.DeviceSynchronize(0); err != nil {
		fmt.Println(err)
		return
	}
	table := make([]byte, 4*batch.Rows*batch.MaxPages)
	lens := make([]byte, 4*batch.Rows)
	if err := errors.Join(
		rt.Memcpy(0, cudart.HostMem(table), cudart.DeviceMem(batch.Table, uint64(len(table))), cudart.DeviceToHost),
		rt.Memcpy(0, cudart.HostMem(lens), cudart.DeviceMem(batch.Lens, uint64(len(lens))), cudart.DeviceToHost),
	); err != nil {
		fmt.Println(err)
		return
	}
	pageTokens := c.Layout().PageTokens
	for row := range batch.Rows {
		n := int(int32(binary.LittleEndian.Uint32(lens[4*row:])))
		var ids []int32
		for i := range (n + pageTokens - 1) / pageTokens {
			ids = append(ids, int32(binary.LittleEndian.Uint32(table[4*(row*batch.MaxPages+i):])))
		}
		fmt.Printf("row %d: %d tokens in pages %v\n", row, n, ids)
	}
	// Output:
	// row 0: 40 tokens in pages [0 1 2]
	// row 1: 5 tokens in pages [3]
}

// Swapping out a fork moves only the page it holds alone: the pages it
// shares stay on the device, held by both.
func ExampleSeq_SwapOut_shared() {
	c, _, done, err := newExampleCache(kvcache.WithPages(8), kvcache.WithSwap(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	a := c.Create()
	if _, err := a.Append(make([]int32, 32)); err != nil { // 2 full pages
		fmt.Println(err)
		return
	}
	f, err := a.Fork()
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := f.Append([]int32{1, 2, 3}); err != nil { // a page of its own
		fmt.Println(err)
		return
	}
	if err := f.SwapOut(); err != nil {
		fmt.Println(err)
		return
	}
	st := c.Stats()
	fmt.Printf("swapped out: %d page copied, %d pages used on the device\n", st.SwapOuts, st.Used)
	if err := f.SwapIn(); err != nil {
		fmt.Println(err)
		return
	}
	st = c.Stats()
	fmt.Printf("swapped in: %d tokens; %d page copied back, %d pages used\n", f.Len(), st.SwapIns, st.Used)

	fmt.Println(c.Create().SwapIn())
	// Output:
	// swapped out: 1 page copied, 2 pages used on the device
	// swapped in: 35 tokens; 1 page copied back, 3 pages used
	// kvcache: sequence not swapped out: SwapIn of seq 2, whose pages are on the device; SwapOut comes first
}
