// Package kvcache is a paged KV cache on a pool's device arena: the memory
// of attention keys and values, which grows a token at a time to lengths no
// one knows in advance, taken in fixed-size pages from one pre-reserved
// buffer, as vLLM's PagedAttention does.
//
// It is a package of its own, not part of pool, because it is a different
// kind of memory: pool plans buffers whose sizes are known before the first
// request; kvcache hands out pages while requests run. It is built on pool
// (one WantDevice for the pages) and needs nothing inside it, so pool
// stays as it is and a program that does not serve language models never
// links this.
//
// A Layout (layers, KV heads, head dimension, element type, tokens per
// page) gives a page's bytes; New places the pages as one buffer of a pool,
// sized in bytes, in pages, or as a fraction of the arena's room after the
// model's buffers (WithFreeFraction; on a growable arena, of the device's
// free memory, mapped at New). A Seq is one sequence: Create, Append
// token ids (taking pages as needed), Fork (sharing every page, counted by
// reference), Free. Appending to a partial page another sequence shares
// copies it first, on the device, on the cache's stream (copy-on-write).
//
// Full pages are cached by prefix: each is known by its parent's hash and
// its token ids, so a sequence whose prompt starts with tokens another
// sequence appended reuses those pages (Append says how many tokens it
// found, in tokens). A page no sequence holds stays cached until the free
// pages run out; then the least recently freed is taken first. Stats
// counts pages used, cached and free, the hits and misses (in pages: the
// prompts' pages reused, and those appended whole and not found), and the
// utilization: the bytes of tokens held against the bytes reserved; Var
// publishes them.
//
// When a memory tool listens (compute-sanitizer through NVTX, or the fake
// WithMemcheck), every page a sequence holds is a region named after the
// page and its sequences, and nothing else of the page buffer is: a kernel
// or copy that reads a page freed since, or never taken, is reported, and
// on the fake the message names the page and the sequence that held it.
// Scope narrows the regions to a batch's pages, so that a read of another
// sequence's page is reported too.
//
// Kernels find the pages through page tables (NewTables): a batch's page
// ids as a [rows][maxPages] int32 table and its lengths as [rows] int32, in
// the pool's device arena, laid out for one launch. Tables.Sync brings them
// up to date on the cache's stream, copying from a pinned staging ring in
// the pool's host arena only the entries that changed since its last call:
// in a decode step, the lengths and the page ids taken since. A kernel
// reads only the entries a row's length needs: those past it are not
// cleared.
//
// A sequence preempted when the pages run out is swapped out (SwapOut):
// the pages it holds alone are copied on the cache's stream to host pages
// of a swap space in the pool's pinned host arena (WithSwap) and are free
// on the device until SwapIn takes pages again and copies them back, but
// for full pages whose prefix the device still holds (another sequence's,
// or cached), which it holds again. The pages it shares with other
// sequences stay on the device, held by it, and are not copied: a shared
// prompt stays stored once. A refusal for want of pages, on either side,
// is a *NoPagesError; SwapOut on a Cache without a swap space is
// ErrNoSwap. Stats counts the pages copied each way and those found.
//
// Admit tells a scheduler whether a new prompt and n tokens after it fit,
// keeping a watermark of pages free for the running sequences; a refusal
// is a *NoPagesError with the pages needed and free, matching ErrNoPages.
//
// Taking and returning a page is O(1) and allocates nothing: a stack of
// free page ids and an intrusive doubly linked LRU list of cached ones, in
// slices made by New. Sync allocates nothing either (the runtime's calls
// may: the fake's copies do).
//
// The Examples (example_test.go) show a cache made, sequences created,
// appended to, forked and freed, a prompt's pages reused, a sequence
// swapped out and in, and page tables read back as a kernel reads them.
//
// # Caveats
//
// A Cache is not safe for concurrent use. It and its Seqs belong to one
// goroutine at a time, the scheduler's, as vLLM's block manager belongs to
// its scheduler: a program that hands the cache to another goroutine does
// so through a channel or a mutex, which the race detector checks. Only
// the value Var returns may be read from any goroutine.
//
// The pages are a buffer of the pool: after the pool's ReleaseAll or Close
// every call of the Cache, its Seqs and its Tables that can fail refuses
// with ErrReleased and changes nothing (Stats still reads the books), and
// page addresses taken before must not be used: make a new Cache. Each
// such call asks the pool whether the buffer is still placed (pool's
// Buffer.Placed: two atomic loads, no lock), since the pool may be
// released from another goroutine. A call racing with such a release
// either completes before it or is refused with ErrReleased and changes
// nothing: the calls that write the pool's memory (Append's copy-on-write,
// SwapOut, SwapIn, Sync) hold the release off while they write or queue
// their copies (Buffer.Use), so ReleaseAll and Close wait for those
// copies as for the rest of the stream's work (when the cache's stream is
// one the pool waits for: WithStreams, UseStreams, or the whole device).
// A reset of the device is not held off: it frees the pages under any
// call.
//
// The cache keeps token ids and page ids; the keys and values are the
// program's kernels' to write, at PagePtr(id) plus Layout.Offset (a test
// without kernels may write them there with the runtime's Memcpy). A page is entered in the prefix index when
// Append fills it with ids, before the kernel that computes its keys and
// values has run: a sequence that reuses it must read it after that kernel,
// which one stream for both (WithStream) guarantees. Likewise a page freed
// and taken again may be written by the next kernel while an earlier one
// still reads it on another stream: queue the work that reads a sequence's
// pages before freeing it on the same stream, or wait for it.
//
// Prefix hits are confirmed against the page's token ids and its parent's
// 64-bit hash: two different prefixes whose hashes collide would share
// pages, with odds of about one in 2^64 for each pair.
package kvcache
