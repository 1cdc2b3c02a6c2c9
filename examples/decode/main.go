// Command decode serves a decoder-only transformer from the paged KV cache
// (package kvcache) with continuous batching and greedy decoding, and in
// the same run from a baseline that reserves each sequence's maximum
// length contiguously in the same KV bytes, and reports what each did with
// the memory.
//
//	go run ./examples/decode [-runtime=auto|cuda|fake] [-requests 256] [-kvseqs 16] [-system 512] [-check 2] [-dump DIR]
//
// The model (shape): -layers blocks of pre-norm attention and a ReLU
// feed-forward layer, as OPT's, with RMSNorm for LayerNorm; width -width,
// -heads query heads of 64 sharing -kvheads key/value heads
// (grouped-query attention), FFN -ffn, vocabulary -vocab, learned
// positions up to -ctx. On a GPU the defaults are the size: 4
// layers, width 1024, 16 heads over 4 KV heads, FFN 4096, vocabulary
// 32,000, context 2,048; on the fake a small model (2 layers, width 128,
// 2 heads over 1, FFN 256, vocabulary 256, context 256) unless given, and
// on a GPU too with -small, with the fake's workload and checks: a quick
// check of the kernels against the CPU, every token of every request. The
// weights are FP16, drawn from -seed (newWeights says how); the output
// projection is the embedding's transpose, scaled by 1/sqrt(width).
//
// A step: embed (token and position) -> for each block: RMSNorm, the fused
// QKV projection (cuBLAS GEMMs, FP16 in, FP32 out and accumulation), the
// new keys and values stored FP16 into the sequences' pages (kv_store),
// attention over the pages (a PTX kernel reading K and V through the page
// table's int32 ids; a warp per row and head, online softmax), the output
// projection added to the FP32 residual (GEMMs with beta 1), RMSNorm, the
// FFN's GEMMs around a ReLU -> final RMSNorm of each sequence's last row ->
// logits (GEMMs) -> argmax (PTX). The fake runs each PTX kernel as a Go
// function that reads what the PTX reads.
//
// Every activation is float32 but the keys and values the cache keeps
// (FP16). A kernel whose output a GEMM reads writes it as two FP16 halves,
// hi = FP16(v) and lo = FP16((v - hi) × 2048), and each projection is two
// FP16 GEMMs, W × hi plus W × lo / 2048, accumulating in FP32: the product
// of the weights and the float32 activations, for twice the GEMMs' work.
// Were the GEMMs' inputs rounded to FP16 instead, two correct
// implementations (the GPU's, the CPU's) would round a few of them the
// other way, and the flips would spread until logits differed by about
// the tolerance (reference.go says how).
//
// Prefill: a step's rows are tokens, not sequences. A sequence admitted
// brings every token of its prompt not found in the prefix cache as rows
// of the step it joins, beside the other sequences' one decode token each:
// the GEMMs see one matrix, and attention is causal through each row's
// position. A prompt is never split across steps, so a page the cache
// enters in its prefix index holds its keys and values by the end of that
// step, before any later sequence reads it (kvcache's caveat); a sequence
// admitted in the same step reads it after kv_store has written it.
//
// Scheduling (vLLM's): at every step the running sequences append their
// next token, oldest first; one that finds no page free preempts the
// newest running, whose own pages (not those it shares, which stay) are
// swapped out to the pool's pinned arena (or, with the swap space full,
// freed and recomputed); swapped-out
// sequences come back first, oldest first, when their pages and one more
// fit; then waiting requests are admitted in order (kvcache.Admit, which
// keeps 1% of the pages free) while a row and the step's token budget
// (-ctx tokens) allow. A sequence leaves when it has generated its output
// length.
//
// The workload (newWorkload): -requests requests, all waiting at the
// start, each a user prompt of log-normal length (median -prompt, shape
// -sigma) and an output length drawn the same way (median -output),
// clamped to half of what the context leaves after the system prompt. It
// runs twice: plain, and with the same -system tokens of system prompt
// before every user prompt (prefix caching stores its pages once; -system 0
// skips this variant). Each variant runs on the paged cache and on the
// baseline, -kvseqs maximum-length sequences of KV bytes each.
//
// The report, for each run: KV utilization (bytes of tokens held over the
// arena's) over the run in tenths of its steps and averaged over its
// steps; the most sequences running at once, and what bounded admission
// then and at every step (the KV pages, the rows, the step's rows of
// prompt, or no request left waiting); output tokens/s; time to first
// token and time per output token (p50, p99); prefix hits; preemptions,
// and the pages and bytes swapped out and in (and the pages a swap-in
// found on the device, shared with other sequences); with the system
// prompt, the bytes holding tokens over those of the unshared tokens plus
// one copy of the system prompt; and device memory taken outside the pool
// during the run: the drops of cudaMemGetInfo's free memory after each
// step, added up, a rise (memory given back, which this program does not
// do while it runs: cudaMemGetInfo counts the whole device) reported
// apart. Against the baseline, it gives the most at once and tokens/s as
// ratios, the latter as the product of fewer steps and the time a step.
// Before the runs, a warm-up queues every GEMM shape a step may queue (the
// GEMMs' columns are padded to a few counts) and serves two requests of
// its own, so that CUDA has loaded every kernel the runs launch. Timings
// on the fake are labelled: they are not a GPU's.
//
// The check: the logits of the first -check-steps tokens generated for the
// first -check requests of each variant are copied back from both runs
// and compared with the CPU's recomputation (reference.go: float32 with
// float64 sums, the keys and values rounded to FP16, as the manifest of
// -dump says), within 1e-2 relative or 1e-3 absolute, and each greedy
// token with the reference's where its top two logits differ by more. The
// report gives, beside the count out of tolerance, the worst and the RMS
// difference, the same figures for a second CPU recomputation that sums
// its GEMMs in float32: the spread two FP32 implementations show, from
// the keys and values they round to FP16 the other way now and then. A
// difference fails the run (exit 1) at its end, after both variants, the
// report and the dump; a kernel's fault fails it at once. On the fake the
// defaults check every request's every token.
//
// -dump DIR writes the weights, the prompts, the tokens generated and the
// logits of a few steps with manifest.json, so that another framework can
// recompute the logits for the same tokens.
package main

import (
	"fmt"
	"io"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

const about = `decode: a decoder-only transformer (FP16 weights and KV cache, cuBLAS
GEMMs, attention over KV pages in a PTX kernel) served with continuous
batching and greedy decoding from the paged KV cache (prefix caching,
swapping to pinned memory), and in the same run from a baseline that
reserves every sequence's maximum length in the same KV bytes. A workload
of heavy-tailed prompt and output lengths runs plain and with a shared
system prompt. It reports KV utilization over time, the most sequences at
once, tokens/s, time per output token, prefix hits, swaps and device memory
taken outside the pool, and checks logits and tokens against a CPU
recomputation (a difference exits 1). Defaults: the issue's model on a GPU,
a small one on the fake. Progress goes to stderr, the report to stdout.`

func main() { cli.Main(run) }

// config is what the flags ask for.
type config struct {
	runtime    string
	model      shape
	seed       uint64
	work       workloadConfig
	kvSeqs     int
	maxBatch   int
	swapPages  int // 0: as many as the device's pages
	check      int
	checkSteps int
	dump       string
	corrupt    bool // tests: change one weight on the device after loading it
}

func run(args []string, stdout, stderr io.Writer) int { return runWith(args, stdout, stderr, nil) }

// runWith is run with tweak, when not nil, applied to the configuration the
// flags give: the tests' way to break a run on purpose.
func runWith(args []string, stdout, stderr io.Writer, tweak func(*config)) int {
	fs := cli.New("decode", about, stderr)
	var c config
	m := &c.model
	fs.RuntimeVar(&c.runtime)
	fs.IntVar(&m.layers, "layers", fullShape.layers, "transformer blocks (2 on the fake unless given)")
	fs.IntVar(&m.width, "width", fullShape.width, "model width: -heads × 64 (128 on the fake unless given)")
	fs.IntVar(&m.heads, "heads", fullShape.heads, "query heads of 64 (2 on the fake unless given)")
	fs.IntVar(&m.kvHeads, "kvheads", fullShape.kvHeads, "key/value heads, dividing -heads (1 on the fake unless given)")
	fs.IntVar(&m.ffn, "ffn", fullShape.ffn, "feed-forward width (256 on the fake unless given)")
	fs.IntVar(&m.vocab, "vocab", fullShape.vocab, "vocabulary (256 on the fake unless given)")
	fs.IntVar(&m.ctx, "ctx", fullShape.ctx, "context: the most tokens of a sequence, a multiple of 16; the baseline reserves this much a sequence (256 on the fake unless given)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the weights and the workload")
	fs.IntVar(&c.work.requests, "requests", 256, "requests of each variant (24 on the fake unless given)")
	fs.IntVar(&c.work.promptMedian, "prompt", 128, "median tokens of a user prompt (12 on the fake unless given)")
	fs.IntVar(&c.work.outputMedian, "output", 192, "median tokens generated (12 on the fake unless given)")
	fs.Float64Var(&c.work.sigma, "sigma", 1, "log-normal shape of both lengths: the standard deviation of their logarithm")
	fs.IntVar(&c.work.system, "system", 512, "tokens of the system prompt of the shared variant; 0 runs the plain variant only (64 on the fake unless given)")
	fs.IntVar(&c.kvSeqs, "kvseqs", 16, "KV memory of each run, in maximum-length (-ctx) sequences: what the baseline holds at once (2 on the fake unless given)")
	fs.IntVar(&c.maxBatch, "maxbatch", 256, "sequences running at once, at most: the page tables' rows (32 on the fake unless given)")
	fs.IntVar(&c.swapPages, "swap", 0, "host pages of the swap space in the pool's pinned arena; 0: as many as the device's KV pages")
	fs.IntVar(&c.check, "check", 2, "requests of each variant whose logits are compared with the CPU's, the first ones (every request on the fake unless given)")
	fs.IntVar(&c.checkSteps, "check-steps", 16, "tokens generated for each checked request whose logits are compared (every one on the fake unless given)")
	small := fs.Bool("small", false, "the fake's defaults on CUDA too (the small model and workload, every token checked): a quick check of the kernels on a GPU")
	fs.StringVar(&c.dump, "dump", "", "write the weights, prompts, generated tokens and the logits of a few steps, with manifest.json, into this directory")
	if code, exit := fs.ParseArgs(args); exit {
		return code
	}
	if fs.NArg() > 0 {
		return fs.Fail(2, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	rt, err := choose.Open(c.runtime)
	if err != nil {
		return fs.Fail(1, err)
	}
	defer rt.Close()
	if !rt.CUDA || *small {
		fields := map[string]*int{
			"layers": &m.layers, "width": &m.width, "heads": &m.heads, "kvheads": &m.kvHeads, "ffn": &m.ffn, "vocab": &m.vocab, "ctx": &m.ctx,
			"requests": &c.work.requests, "prompt": &c.work.promptMedian, "output": &c.work.outputMedian, "system": &c.work.system,
			"kvseqs": &c.kvSeqs, "maxbatch": &c.maxBatch, "check": &c.check, "check-steps": &c.checkSteps,
		}
		fake := map[string]int{
			"layers": smallShape.layers, "width": smallShape.width, "heads": smallShape.heads, "kvheads": smallShape.kvHeads, "ffn": smallShape.ffn,
			"vocab": smallShape.vocab, "ctx": smallShape.ctx, "requests": 24, "prompt": 12, "output": 12, "system": 64,
			"kvseqs": 2, "maxbatch": 32, "check": 1 << 20, "check-steps": 1 << 20,
		}
		for name, p := range fields {
			if !fs.Given(name) {
				*p = fake[name]
			}
		}
	}
	c.work.vocab, c.work.ctx = m.vocab, m.ctx
	if err := c.validate(); err != nil {
		return fs.Fail(2, err)
	}
	if tweak != nil {
		tweak(&c)
	}
	return fs.Run(rt, stdout, func() error { return measure(rt, c, stdout, stderr) })
}

func (c *config) validate() error {
	if err := c.model.check(); err != nil {
		return err
	}
	w := c.work
	switch {
	case w.requests < 1 || w.promptMedian < 1 || w.outputMedian < 1 || w.sigma < 0:
		return fmt.Errorf("-requests, -prompt and -output must be at least 1, -sigma at least 0")
	case w.system < 0 || w.system > c.model.ctx-4:
		return fmt.Errorf("-system %d: want 0 to %d (-ctx less 4)", w.system, c.model.ctx-4)
	case c.kvSeqs < 1 || c.maxBatch < 1 || c.maxBatch > c.model.ctx || c.swapPages < 0:
		return fmt.Errorf("-kvseqs must be at least 1, -maxbatch 1 to -ctx (%d: a step's rows are at most twice -ctx), -swap at least 0", c.model.ctx)
	case c.check < 0 || c.checkSteps < 1:
		return fmt.Errorf("-check must be at least 0, -check-steps at least 1")
	}
	return nil
}
