package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The tolerance the logits are held to against the CPU's FP32
// recomputation: within relTol of it, or absTol where it is near 0. A
// greedy token must be the reference's wherever the reference's top two
// logits differ by more than that.
const (
	relTol = 1e-2
	absTol = 1e-3
)

// errMismatch is a logit out of tolerance, or a token the reference would
// not have chosen.
var errMismatch = errors.New("differs from the CPU reference")

func tolerance(want float32) float64 { return math.Max(absTol, relTol*math.Abs(float64(want))) }

// checker recomputes checked requests on the CPU and compares what the
// runs captured; a second recomputation (sum32) gives the spread two FP32
// implementations show at the same logits, beside the device's.
type checker struct {
	system     []int32
	exact, alt *recomputer
	gpu, floor drift // the runs' logits against exact; alt's against exact
	tokens     int   // compared (the reference's top two apart by more than the tolerance)
	ties       int   // not compared: the top two within the tolerance
	tokenErrs  int
}

// recomputer is one reference and what it has computed.
type recomputer struct {
	ref    reference
	prefix *refSeq // after the system prompt, computed once
	memo   map[memoKey]map[int][]float32
}

type memoKey struct {
	id     int
	tokens string
}

func newChecker(w *weights, system []int32) *checker {
	return &checker{
		system: system,
		exact:  &recomputer{ref: reference{w: w}, memo: map[memoKey]map[int][]float32{}},
		alt:    &recomputer{ref: reference{w: w, sum32: true}, memo: map[memoKey]map[int][]float32{}},
	}
}

// drift is how far logits came from the reference's: how many were
// compared and out of tolerance, the sum of their squared differences,
// and the largest ratio of a difference to its tolerance and where.
type drift struct {
	n, over int
	sum2    float64
	worst   float64
	worstAt string
}

// add compares got with want, where names the logit.
func (d *drift) add(got, want float32, where func() string) {
	diff := math.Abs(float64(got) - float64(want))
	if math.IsNaN(diff) {
		diff = math.Inf(1)
	}
	ratio := diff / tolerance(want)
	d.n++
	d.sum2 += diff * diff
	if ratio > 1 {
		d.over++
	}
	if ratio > d.worst || d.worstAt == "" {
		d.worst, d.worstAt = ratio, fmt.Sprintf("%s: %v against %v", where(), got, want)
	}
}

func (d *drift) merge(o drift) {
	if o.n == 0 {
		return
	}
	if o.worst > d.worst || d.worstAt == "" {
		d.worst, d.worstAt = o.worst, o.worstAt
	}
	d.n, d.over, d.sum2 = d.n+o.n, d.over+o.over, d.sum2+o.sum2
}

func (d drift) String() string {
	return fmt.Sprintf("%d out of tolerance, the worst at %.3g of the tolerance (%s), RMS difference %.3g",
		d.over, d.worst, d.worstAt, math.Sqrt(d.sum2/float64(max(d.n, 1))))
}

// check compares run's captured logits of every request it captured with
// the reference's, and each token generated after them. It goes through
// every one and then fails if any logit was out of tolerance or any token
// not the reference's.
func (c *checker) check(run *runResult, reqs []*request) error {
	ids := make([]int, 0, len(run.logits))
	for id := range run.logits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var gpu drift
	var tokenErr error
	tokenErrs := 0
	for _, id := range ids {
		req := reqs[id]
		caught := run.logits[id]
		last := 0
		for p := range caught {
			last = max(last, p)
		}
		// The tokens up to the last position checked, and the one after.
		tokens := append(slices.Clone(req.prompt), run.outputs[id]...)[:last+2]
		want := c.exact.recompute(id, req, tokens[:last+1], caught, c.system)
		alt := c.alt.recompute(id, req, tokens[:last+1], caught, c.system)
		positions := make([]int, 0, len(caught))
		for p := range caught {
			positions = append(positions, p)
		}
		slices.Sort(positions)
		for _, p := range positions {
			got, ref := caught[p], want[p]
			for t, g := range got {
				where := func() string {
					return fmt.Sprintf("%s run, %s, request %d, position %d, token %d", run.store, run.variant, id, p, t)
				}
				gpu.add(g, ref[t], where)
				c.floor.add(alt[p][t], ref[t], where)
			}
			first, second := topTwo(ref)
			if float64(first-second) <= tolerance(first) {
				c.ties++
				continue
			}
			c.tokens++
			if best := argmax(ref); int32(best) != tokens[p+1] {
				if tokenErrs++; tokenErr == nil {
					tokenErr = fmt.Errorf("%w: %s run, %s, request %d, position %d: generated token %d, the CPU's greedy choice is %d (logits %v and %v, apart by more than the tolerance)",
						errMismatch, run.store, run.variant, id, p, tokens[p+1], best, ref[tokens[p+1]], first)
				}
			}
		}
	}
	c.gpu.merge(gpu)
	c.tokenErrs += tokenErrs
	var err error
	if gpu.over > 0 {
		err = fmt.Errorf("%w: %s run, %s: %d of %d logits out of tolerance (%g relative or %g absolute), the worst at %.3g of it (%s)",
			errMismatch, run.store, run.variant, gpu.over, gpu.n, relTol, absTol, gpu.worst, gpu.worstAt)
	}
	if tokenErrs > 1 {
		tokenErr = fmt.Errorf("%w, and %d more tokens", tokenErr, tokenErrs-1)
	}
	return errors.Join(err, tokenErr)
}

// recompute is the reference's logits at the positions of want, feeding
// tokens; a sequence seen before (the other run's, when both generated the
// same tokens) is not recomputed.
func (c *recomputer) recompute(id int, req *request, tokens []int32, want map[int][]float32, system []int32) map[int][]float32 {
	key := memoKey{id, fmt.Sprint(tokens)}
	if got, ok := c.memo[key]; ok && covers(got, want) {
		return got
	}
	s := c.ref.w.s
	seq, from := newRefSeq(s), 0
	if len(system) > 0 && len(req.prompt) > len(system) && slices.Equal(req.prompt[:len(system)], system) {
		if c.prefix == nil {
			c.prefix = newRefSeq(s)
			for _, t := range system {
				c.ref.forward(c.prefix, t, nil)
			}
		}
		seq, from = c.prefix.clone(), len(system)
	}
	out := map[int][]float32{}
	for p := from; p < len(tokens); p++ {
		var lg []float32
		if _, ok := want[p]; ok {
			lg = make([]float32, s.vocab)
			out[p] = lg
		}
		c.ref.forward(seq, tokens[p], lg)
	}
	c.memo[key] = out
	return out
}

func covers(have, want map[int][]float32) bool {
	for p := range want {
		if _, ok := have[p]; !ok {
			return false
		}
	}
	return true
}

// String says what was compared and how near the tolerance it came.
func (c *checker) String() string {
	if c.gpu.n == 0 {
		return "nothing compared"
	}
	tokens := "all equal"
	if c.tokenErrs > 0 {
		tokens = fmt.Sprintf("%d differ", c.tokenErrs)
	}
	return fmt.Sprintf("%d logits compared: %v; the CPU's own spread at the same logits (a second recomputation, its GEMMs summed in float32 %d products at a time, against the first): %v; %d greedy tokens compared, %s; %d not compared, their top two logits within the tolerance",
		c.gpu.n, c.gpu, sumBlock, c.floor, c.tokens, tokens, c.ties)
}
