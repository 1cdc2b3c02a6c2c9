package kvcache

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// newBenchCache is a Cache of small's pages, on a pool with a pinned arena
// for page tables, with no memory tool listening,
// as in production (CUDA on a GPU host, else the fake without its memcheck):
// with one, every change re-annotates the pages, which is what a tool run
// costs, not the allocator.
func newBenchCache(b *testing.B, pages int) *Cache {
	rt := cudarttest.Open(b, cudarttest.WithoutMemcheck())
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(1<<20))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, p.Close()) })
	c, err := New(rt, p, small, WithPages(pages))
	require.NoError(b, err)
	require.False(b, c.annotated)
	return c
}

// BenchmarkTakeReturnPage is the allocator's hot path: a page taken and
// given back, once each per iteration. With the cache half full, the free
// stack is neither empty nor full.
func BenchmarkTakeReturnPage(b *testing.B) {
	c := newBenchCache(b, 1024)
	for range 512 {
		c.take()
	}
	b.ReportAllocs()
	for b.Loop() {
		id, _ := c.take()
		c.put(id)
	}
}

// BenchmarkEvictAndReturnPage takes a page by evicting the least recently
// used cached one, then returns it to the LRU list: the path once the free
// pages have run out.
func BenchmarkEvictAndReturnPage(b *testing.B) {
	c := newBenchCache(b, 1024)
	s := c.Create()
	if _, err := s.Append(toks(0, 1024*small.PageTokens)); err != nil {
		b.Fatal(err)
	}
	if err := s.Free(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		id, _ := c.take()
		c.hashed[id] = true // cached again, as a page Append filled would be
		c.put(id)
	}
}

// BenchmarkDecodeStep is one token appended to each of 64 sequences, as a
// decode step does, a page taken every PageTokens steps; the sequences are
// freed and started again when the cache fills.
func BenchmarkDecodeStep(b *testing.B) {
	c := newBenchCache(b, 4096)
	seqs := newSeqs(b, c, 64, nil)
	tok := []int32{7}
	b.ReportAllocs()
	for b.Loop() {
		for i, s := range seqs {
			if _, err := s.Append(tok); err != nil {
				for j := range seqs {
					if err := seqs[j].Free(); err != nil {
						b.Fatal(err)
					}
					seqs[j] = c.Create()
				}
				s = seqs[i]
				if _, err := s.Append(tok); err != nil {
					b.Fatal(err)
				}
			}
			tok[0]++
		}
	}
}
