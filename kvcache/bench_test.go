package kvcache

import (
	"testing"
)

// BenchmarkTakeReturnPage is the allocator's hot path: a page taken and
// given back, once each per iteration. With the cache half full, the free
// stack is neither empty nor full.
func BenchmarkTakeReturnPage(b *testing.B) {
	c, _, _ := newCache(b, WithPages(1024))
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
	c, _, _ := newCache(b, WithPages(1024))
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
	c, _, _ := newCache(b, WithPages(4096))
	seqs := make([]Seq, 64)
	for i := range seqs {
		seqs[i] = c.Create()
	}
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
