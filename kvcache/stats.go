package kvcache

import (
	"encoding/json"
	"runtime"
	"sync/atomic"
)

// Stats describes the pages and what they hold.
type Stats struct {
	Pages  int // pages in the arena
	Used   int // held by at least one sequence
	Cached int // held by none but full and kept for prefix reuse: taken after the free ones, least recently used first
	Free   int // neither held nor cached
	Seqs   int // live sequences

	// Tokens are the tokens in the pages held, a shared page's once;
	// TokenBytes their keys' and values' bytes, and Reserved the page
	// arena's bytes. Utilization is TokenBytes / Reserved: what vLLM's
	// paper measures, 20.4–38.2% for contiguous maximum-length reservations.
	Tokens      uint64
	TokenBytes  uint64
	Reserved    uint64
	Utilization float64

	// Prefix caching, counted in pages, not tokens: an Append that returns
	// cached = 32 with 16 tokens a page adds 2 to Hits. Hits are the
	// pages Append reused; Misses the pages an Append took and filled
	// whole from its own tokens without finding them (a prompt's pages,
	// at prefill). A page filled over several Appends (decoding, a token
	// at a time) is neither, so Hits / (Hits + Misses) is the share of
	// prompt pages reused.
	Hits      uint64
	Misses    uint64
	Copies    uint64 // copy-on-write copies queued
	Evictions uint64 // cached pages taken for new contents

	// Swapping, in pages. SwapOuts are the pages SwapOut copied to the
	// swap space: those a sequence held alone; the pages it shared stayed
	// on the device, uncopied and uncounted. SwapIns are the pages SwapIn
	// copied back; SwapHits those it found on the device by prefix instead
	// (held by another sequence, or cached with no sequence holding them)
	// and held again, uncopied.
	SwapPages int // host pages in the swap space (WithSwap)
	Swapped   int // of them, those holding swapped-out sequences' pages
	SwapOuts  uint64
	SwapIns   uint64
	SwapHits  uint64
}

// Stats returns a snapshot. Like every method of the Cache, it must be
// called by the goroutine that owns the Cache; Var is for other goroutines.
func (c *Cache) Stats() Stats {
	return c.statsOf(c.counts())
}

// counts are the figures Stats derives from, in the order of published.
func (c *Cache) counts() [numCounts]uint64 {
	return [numCounts]uint64{
		uint64(c.held), uint64(c.lruLen), uint64(len(c.free)), uint64(len(c.seqs) - len(c.freeSeqs)),
		c.filled, c.hits, c.misses, c.copies, c.evictions,
		uint64(c.swapped), c.swapOuts, c.swapIns, c.swapHits,
	}
}

const numCounts = 13

func (c *Cache) statsOf(k [numCounts]uint64) Stats {
	s := Stats{
		Pages: int(c.n), Used: int(k[0]), Cached: int(k[1]), Free: int(k[2]), Seqs: int(k[3]),
		Tokens: k[4], Hits: k[5], Misses: k[6], Copies: k[7], Evictions: k[8],
		SwapPages: c.cfg.swap, Swapped: int(k[9]), SwapOuts: k[10], SwapIns: k[11], SwapHits: k[12],
		Reserved: uint64(c.n) * c.stride,
	}
	s.TokenBytes = s.Tokens * c.tokenBytes
	s.Utilization = float64(s.TokenBytes) / float64(s.Reserved)
	return s
}

// published is a copy of the counts that other goroutines may read, kept
// once Var has been called: until then the owner pays one atomic load a
// call for it. version is odd while the owner writes, so that a reader
// retries rather than see counts of two different moments (a seqlock).
type published struct {
	on      atomic.Bool
	version atomic.Uint64
	k       [numCounts]atomic.Uint64
}

// publish refreshes the published counts, if anyone reads them.
func (c *Cache) publish() {
	if !c.pub.on.Load() {
		return
	}
	c.pub.version.Add(1)
	for i, v := range c.counts() {
		c.pub.k[i].Store(v)
	}
	c.pub.version.Add(1)
}

// read is the published counts of one moment.
func (p *published) read() [numCounts]uint64 {
	var k [numCounts]uint64
	for {
		v := p.version.Load()
		for i := range k {
			k[i] = p.k[i].Load()
		}
		if v%2 == 0 && p.version.Load() == v {
			return k
		}
		runtime.Gosched()
	}
}

// Var is the cache's Stats as an expvar.Var, safe to read from any
// goroutine (an HTTP handler's), so that a server publishes them in one
// line:
//
//	expvar.Publish("kvcache", cache.Var())
//
// Var must be called by the owner; from then on every Create, Append, Fork,
// Free, SwapOut and SwapIn also publishes the counts, which the value reads. The value is
// as of the owner's last such call.
func (c *Cache) Var() StatsVar {
	c.pub.on.Store(true)
	c.publish()
	return StatsVar{c}
}

// StatsVar is what Var returns: an expvar.Var (String) and a
// json.Marshaler. Package kvcache does not import expvar, whose init
// serves the process's command line and memory statistics on
// http.DefaultServeMux: a program publishes only what it chooses to.
type StatsVar struct{ c *Cache }

// MarshalJSON is the published Stats as JSON.
func (v StatsVar) MarshalJSON() ([]byte, error) {
	return json.Marshal(v.c.statsOf(v.c.pub.read()))
}

// String is MarshalJSON's JSON, or "null" if it fails, as expvar.Func does.
func (v StatsVar) String() string {
	b, err := v.MarshalJSON()
	if err != nil {
		return "null"
	}
	return string(b)
}
