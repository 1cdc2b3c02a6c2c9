package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/examples/loadgen"
)

// variant is one workload of the run.
type variant struct {
	name   string
	reqs   []*request
	system int
}

// dumpSteps are the steps whose logits -dump writes: the first three and
// two later ones, where the run is that long.
var dumpSteps = map[int]bool{0: true, 1: true, 2: true, 10: true, 100: true}

func measure(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	lib, err := cublas.Open(rt)
	if err != nil {
		return err
	}
	v, err := lib.Version()
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "decode: drawing the weights and the workload...")
	w := newWeights(c.model, c.seed)
	plain, shared := newWorkload(c.work, c.seed)
	ctxPages := c.model.ctx / pageTokens
	kvPages := c.kvSeqs * ctxPages
	swap := c.swapPages
	if swap == 0 {
		swap = kvPages
	}
	free0, _, err := rt.MemGetInfo(dev)
	if err != nil {
		return err
	}
	e, err := newEngine(rt, lib, w, engineConfig{kvPages: kvPages, maxBatch: c.maxBatch, swapPages: swap})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.close()) }()
	free1, _, err := rt.MemGetInfo(dev)
	if err != nil {
		return err
	}
	pooled := e.p.Stats().Device.Mapped
	if c.corrupt {
		// After the CPU's copy was drawn: the device computes with a
		// weight the reference does not have.
		t := w.layers[0].wo
		bits := []uint16{cublas.Float16Bits(w.f32[t.off] + 0.5)}
		if err := e.upload(e.ptr(t), halfBytes(bits)); err != nil {
			return err
		}
	}
	maxPrompt, maxOutput := c.work.limits()
	fmt.Fprintf(stdout, "cuBLAS %s; model: %v; weights %s FP16 from seed %d\n", v, c.model, mib(2*uint64(len(w.bits))), c.seed)
	fmt.Fprintf(stdout, "KV: FP16, %d tokens a page of %s, %s a token; %d pages (%s) for each run: the baseline's %d maximum-length sequences of %d tokens; swap space %d host pages; page tables of %d rows\n",
		pageTokens, mib(e.cache.PageBytes()), mib(e.tokenBytes()), kvPages, mib(uint64(kvPages)*e.cache.PageStride()), e.contigSlots, c.model.ctx, swap, c.maxBatch)
	fmt.Fprintf(stdout, "workload: %d requests from seed %d, all waiting at the start; user prompt and output lengths log-normal, medians %d and %d tokens, sigma %.2g, at most %d and %d; system prompt %d tokens\n",
		c.work.requests, c.seed, c.work.promptMedian, c.work.outputMedian, c.work.sigma, maxPrompt, maxOutput, c.work.system)
	fmt.Fprintf(stdout, "setup: pool of %s device (weights, activations, both KV arenas, page tables, cuBLAS workspace); device memory taken beside it (the cuBLAS handle, the module): %s\n",
		mib(pooled), loadgen.SignedBytes(int64(free0)-int64(free1)-int64(pooled)))

	fmt.Fprintln(stderr, "decode: warming up...")
	if err := e.warmGEMMs(); err != nil {
		return err
	}
	// Requests of their own, whose pages the runs' prompts cannot find
	// cached: every kernel, the page tables' copies and the swaps' run
	// once before the measured runs.
	warm := c.work
	warm.requests, warm.system = 2, 0
	warmReqs, _ := newWorkload(warm, ^c.seed)
	if _, err := e.serve(newPaged(e), warmReqs, runOptions{}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	variants := []variant{{"plain", plain, 0}}
	if c.work.system > 0 {
		variants = append(variants, variant{"shared system prompt", shared, c.work.system})
	}
	checked := map[int]bool{}
	for i := range min(c.check, c.work.requests) {
		checked[i] = true
	}
	var results []*runResult
	checks := map[string]*checker{}
	// A difference from the CPU fails the run at its end, after the other
	// variant, the report and the dump: one run gives every figure.
	var differs []error
	for _, va := range variants {
		var system []int32
		if va.system > 0 {
			system = va.reqs[0].prompt[:va.system]
		}
		ch := newChecker(w, system)
		checks[va.name] = ch
		for _, store := range []kvStore{newPaged(e), newContiguous(e)} {
			label := va.name + ", " + store.name()
			fmt.Fprintf(stderr, "decode: %s: %d requests...\n", label, len(va.reqs))
			opt := runOptions{checked: checked, checkSteps: c.checkSteps, system: va.system, progress: stderr, label: label}
			if c.dump != "" && store.name() == "paged" {
				opt.dumpSteps = dumpSteps
			}
			res, err := e.serve(store, va.reqs, opt)
			if err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
			res.variant = va.name
			results = append(results, res)
		}
		fmt.Fprintf(stderr, "decode: %s: checking %d requests against the CPU...\n", va.name, len(checked))
		for _, res := range results[len(results)-2:] {
			if err := ch.check(res, va.reqs); err != nil {
				differs = append(differs, err)
			}
		}
	}
	report(stdout, e, results, checks, variants)
	if c.dump != "" {
		fmt.Fprintf(stderr, "decode: writing %s...\n", c.dump)
		if err := dump(c, w, variants, results); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ndumped to %s: manifest.json and its files\n", c.dump)
	}
	if !rt.CUDA {
		fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
	}
	fmt.Fprintf(stdout, "\nthe run took %v\n", loadgen.Round(time.Since(start)))
	return errors.Join(differs...)
}

// sameOutputs counts the requests b generated the same tokens for as a.
func sameOutputs(a, b *runResult) int {
	n := 0
	for id, t := range a.outputs {
		if slices.Equal(t, b.outputs[id]) {
			n++
		}
	}
	return n
}
