package kvcache_test

import (
	"errors"
	"fmt"

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
