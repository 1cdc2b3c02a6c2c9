package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cudapool/cudapool/kvcache"
)

// live is a request while a run serves it.
type live struct {
	*request
	tokens    []int32 // the prompt, then the tokens generated
	computed  int     // leading tokens whose keys and values are in the KV store
	row       int     // its row of the page table, -1 off the device
	generated int
	firstAt   time.Duration // since the run's start: the first token, and the last
	doneAt    time.Duration
	logits    map[int][]float32 // captured, by the position whose next token they predict
	seq       kvcache.Seq       // paged only
}

// runResult is what one run measured.
type runResult struct {
	store, variant    string
	system            int // tokens of the shared system prompt, 0 for none
	steps             int
	elapsed           time.Duration
	generated         int
	mostRunning       int
	util              []float64 // bytes of tokens over the bytes taken for sequences (pages held, or reservations), a step each
	occupancy         []float64 // bytes taken for sequences over the arena's, a step each
	sharedRatio       []float64 // bytes holding tokens over the unshared tokens' bytes plus one system prompt's, a step each (system > 0)
	tpot, ttft, stepT []time.Duration
	hitTokens         int            // prompt tokens found cached at admission
	swapOuts, swapIns uint64         // pages copied each way
	swapHits          uint64         // pages a swap-in found on the device
	preemptSwap       int            // sequences swapped out...
	swappedIDs        map[int]bool   // ...which requests
	resumed           int            // sequences swapped back in
	preemptRecompute  int            // sequences freed to be recomputed
	bounds            [numBounds]int // steps by what stopped admission
	mostAt            int            // the first step that ran mostRunning
	mostBound         bound          // what stopped admission then
	taken, givenBack  uint64         // device bytes cudaMemGetInfo saw taken and given back during the run, a step at a time
	outputs           map[int][]int32
	logits            map[int]map[int][]float32 // by request, by position
	dumped            []dumpStep
}

// dumpStep is the logits of one step's sampled rows, for -dump.
type dumpStep struct {
	step int
	rows []dumpRow
}

type dumpRow struct {
	request, position int
	logits            []float32
}

// bound is what stopped a step's admissions.
type bound int

const (
	boundNone    bound = iota // no request waited: every one was admitted
	boundSwapped              // a swapped-out sequence waited to come back, which goes first
	boundRows                 // every row of the page tables, or every slot of the baseline, was taken
	boundBudget               // the step's rows of prompt reached the context (-ctx), what a step holds
	boundPages                // the KV pages: the next prompt did not fit, with the watermark kept free
	numBounds
)

// String says what b is, for the store's run.
func (b bound) String(store string) string {
	switch b {
	case boundSwapped:
		return "swapped-out sequences waiting to come back"
	case boundRows:
		if store == "contiguous" {
			return "the baseline's maximum-length slots (-kvseqs)"
		}
		return "the page tables' rows (-maxbatch)"
	case boundBudget:
		return "the step's rows of prompt (-ctx)"
	case boundPages:
		return "the KV pages"
	}
	return "no request left waiting"
}

// runOptions say what a run records besides its measurements.
type runOptions struct {
	checked    map[int]bool // requests whose first checkSteps outputs' logits are captured
	checkSteps int
	dumpSteps  map[int]bool // steps whose every sampled row's logits are captured
	system     int          // tokens of the system prompt every request starts with, 0 for none
	progress   io.Writer
	label      string
}

// serve runs every request to its end with continuous batching, a step
// at a time: the running sequences each append their last token (oldest
// first; one that finds no page preempts the newest running, swapped out
// or, with the swap space full, freed to be recomputed), swapped-out ones
// come back oldest first while they fit, then waiting ones are admitted in
// order while they fit (none while a swapped-out one waits), each
// bringing its uncached prompt tokens as rows of this step. One step runs
// every row through the model and samples each sequence's next token;
// those that reach their output length leave.
func (e *engine) serve(kv kvStore, reqs []*request, opt runOptions) (*runResult, error) {
	res := &runResult{store: kv.name(), system: opt.system, outputs: map[int][]int32{}, logits: map[int]map[int][]float32{}, swappedIDs: map[int]bool{}}
	waiting := make([]*live, 0, len(reqs))
	for _, r := range reqs {
		waiting = append(waiting, &live{request: r, tokens: slices.Clone(r.prompt), row: -1})
	}
	var running, swapped []*live
	maxRun := min(kv.rows(), e.maxSample)
	out0, in0, hits0 := kv.counts()
	lastFree, _, err := e.rt.MemGetInfo(dev)
	if err != nil {
		return nil, err
	}
	var sampling time.Duration // spent in cudaMemGetInfo, not counted in the run's time
	start := time.Now()
	lastProgress := start
	rows := make([]rowDesc, 0, e.maxRows)
	var sample []int32
	var capture []int
	for step := 0; len(waiting)+len(running)+len(swapped) > 0; step++ {
		for i := 0; i < len(running); i++ {
			r := running[i]
			for {
				ok, err := kv.grow(r)
				if err != nil {
					return nil, fmt.Errorf("request %d: %w", r.id, err)
				}
				if ok {
					break
				}
				victim := running[len(running)-1]
				running = running[:len(running)-1]
				out, err := kv.preempt(victim)
				if err != nil {
					return nil, fmt.Errorf("preempt request %d: %w", victim.id, err)
				}
				if out {
					swapped = append(swapped, victim)
					res.preemptSwap++
					res.swappedIDs[victim.id] = true
				} else {
					victim.computed = 0
					waiting = slices.Insert(waiting, 0, victim)
					res.preemptRecompute++
				}
				if victim == r {
					break
				}
			}
		}
		for len(swapped) > 0 && len(running) < maxRun {
			ok, err := kv.resume(swapped[0])
			if err != nil {
				return nil, fmt.Errorf("resume request %d: %w", swapped[0].id, err)
			}
			if !ok {
				break
			}
			running = append(running, swapped[0])
			swapped = swapped[1:]
			res.resumed++
		}
		// Admission never backs out: a prompt's full pages are in the
		// prefix index from its Append on, and must have their keys and
		// values by the end of this step. So a request is admitted while
		// the step has fewer than the context's rows, and the buffers
		// hold twice that.
		rowsNow := 0
		for _, r := range running {
			rowsNow += len(r.tokens) - r.computed
		}
		stop := boundNone
		for len(waiting) > 0 {
			if len(swapped) > 0 {
				stop = boundSwapped
			} else if len(running) >= maxRun {
				stop = boundRows
			} else if rowsNow >= e.s.ctx {
				stop = boundBudget
			}
			if stop != boundNone {
				break
			}
			r := waiting[0]
			cached, ok, err := kv.admit(r)
			if err != nil {
				return nil, fmt.Errorf("admit request %d: %w", r.id, err)
			}
			if !ok {
				stop = boundPages
				break
			}
			if ok, err = kv.grow(r); err != nil || !ok {
				return nil, fmt.Errorf("request %d, admitted: no page for its last token (%v)", r.id, err)
			}
			r.computed = cached
			res.hitTokens += cached
			rowsNow += len(r.tokens) - cached
			running = append(running, r)
			waiting = waiting[1:]
		}
		if len(running) == 0 {
			return nil, fmt.Errorf("nothing runs: %d requests wait and %d are swapped out, and none fits the KV memory alone", len(waiting), len(swapped))
		}
		res.bounds[stop]++
		if len(running) > res.mostRunning {
			res.mostRunning, res.mostAt, res.mostBound = len(running), step, stop
		}
		tb, held, reserved := kv.usage(running)
		res.util = append(res.util, float64(tb)/float64(max(held, 1)))
		res.occupancy = append(res.occupancy, float64(held)/float64(reserved))
		if res.system > 0 {
			var unshared uint64
			for _, r := range running {
				unshared += uint64(len(r.tokens) - res.system)
			}
			res.sharedRatio = append(res.sharedRatio, float64(held)/float64((unshared+uint64(res.system))*e.tokenBytes()))
		}
		rows, sample, capture = rows[:0], sample[:0], capture[:0]
		table := make([]*live, kv.rows())
		for k, r := range running {
			for p := r.computed; p < len(r.tokens); p++ {
				rows = append(rows, rowDesc{token: r.tokens[p], tableRow: int32(r.row), pos: int32(p)})
			}
			sample = append(sample, int32(len(rows)-1))
			if opt.dumpSteps[step] || (opt.checked[r.id] && r.generated < opt.checkSteps) {
				capture = append(capture, k)
			}
			table[r.row] = r
		}
		view, err := kv.sync(table)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		out, err := e.step(rows, sample, capture, view)
		if err != nil {
			return nil, fmt.Errorf("step %d (%d rows, %d sequences): %w", step, len(rows), len(running), err)
		}
		now := time.Now()
		res.stepT = append(res.stepT, now.Sub(t0))
		at := now.Sub(start) - sampling
		// After each step, so that memory taken and memory given back
		// (by something else: cudaMemGetInfo is the whole device's) are
		// seen apart, not netted over the run.
		free, _, err := e.rt.MemGetInfo(dev)
		if err != nil {
			return nil, err
		}
		if free < lastFree {
			res.taken += lastFree - free
		} else {
			res.givenBack += free - lastFree
		}
		lastFree = free
		sampling += time.Since(now)
		var ds *dumpStep
		if opt.dumpSteps[step] {
			res.dumped = append(res.dumped, dumpStep{step: step})
			ds = &res.dumped[len(res.dumped)-1]
		}
		kept := running[:0]
		for k, r := range running {
			pos := len(r.tokens) - 1
			if lg, ok := out.logits[k]; ok {
				if opt.checked[r.id] && r.generated < opt.checkSteps {
					if r.logits == nil {
						r.logits = map[int][]float32{}
					}
					r.logits[pos] = lg
				}
				if ds != nil {
					ds.rows = append(ds.rows, dumpRow{request: r.id, position: pos, logits: lg})
				}
			}
			r.computed = len(r.tokens)
			r.tokens = append(r.tokens, out.tokens[k])
			r.generated++
			if r.generated == 1 {
				r.firstAt = at
			}
			if r.generated < r.outLen {
				kept = append(kept, r)
				continue
			}
			r.doneAt = at
			if err := kv.free(r); err != nil {
				return nil, err
			}
			res.outputs[r.id] = r.tokens[len(r.prompt):]
			if r.logits != nil {
				res.logits[r.id] = r.logits
			}
			res.generated += r.generated
			res.ttft = append(res.ttft, r.firstAt)
			if r.generated > 1 {
				res.tpot = append(res.tpot, (r.doneAt-r.firstAt)/time.Duration(r.generated-1))
			}
		}
		clear(running[len(kept):])
		running = kept
		res.steps++
		if opt.progress != nil && now.Sub(lastProgress) > time.Second {
			lastProgress = now
			fmt.Fprintf(opt.progress, "decode: %s: step %d, %d running, %d waiting, %d swapped out, %d of %d requests done\n",
				opt.label, step, len(running), len(waiting), len(swapped), len(res.outputs), len(reqs))
		}
	}
	res.elapsed = time.Since(start) - sampling
	out1, in1, hits1 := kv.counts()
	res.swapOuts, res.swapIns, res.swapHits = out1-out0, in1-in0, hits1-hits0
	return res, nil
}
