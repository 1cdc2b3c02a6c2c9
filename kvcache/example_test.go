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
