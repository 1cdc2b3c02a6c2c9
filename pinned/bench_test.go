package pinned

import (
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// BenchmarkAlloc pins and frees 256 MiB with each method on the fake: the
// cost of the Go side (mmap, advice, parallel touch, registry), since the
// fake pins nothing. examples/bandwidth measures real CUDA.
func BenchmarkAlloc(b *testing.B) {
	const size = 256 << 20
	for _, m := range Methods() {
		b.Run(m.String(), func(b *testing.B) {
			f := cudarttest.NewFake()
			b.SetBytes(size)
			for b.Loop() {
				r, err := Alloc(f, 0, size, WithMethod(m))
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Free(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
