package pinned

import (
	"os"
	"sync"
)

// touch writes one byte in every page of b from up to workers goroutines, so
// that the kernel backs the memory in parallel instead of one fault at a
// time inside cudaHostRegister. Each goroutine takes one contiguous share,
// which keeps a huge page's faults on one core.
func touch(b []byte, workers int) {
	page := os.Getpagesize()
	var wg sync.WaitGroup
	for _, s := range shares(len(b), page, workers) {
		wg.Add(1)
		go func(part []byte) {
			defer wg.Done()
			for i := 0; i < len(part); i += page {
				part[i] = 0
			}
		}(b[s[0]:s[1]])
	}
	wg.Wait()
}

// shares splits n bytes into at most workers contiguous [start, end) pieces
// that start on page boundaries and cover all of n, the first ones one page
// longer when the pages do not divide evenly.
func shares(n, page, workers int) [][2]int {
	pages := (n + page - 1) / page
	workers = max(min(workers, pages), 1)
	out := make([][2]int, 0, workers)
	start := 0
	for w := range workers {
		count := pages / workers
		if w < pages%workers {
			count++
		}
		end := min(start+count*page, n)
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}
