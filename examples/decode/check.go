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
// runs captured.
type checker struct {
	ref     reference
	system  []int32
	prefix  *refSeq // after the system prompt, computed once
	memo    map[memoKey]map[int][]float32
	logits  int // compared
	tokens  int // compared (the reference's top two apart by more than the tolerance)
	ties    int // not compared: the top two within the tolerance
	worst   float64
	worstAt string
}

type memoKey struct {
	id     int
	tokens string
}

func newChecker(w *weights, system []int32) *checker {
	return &checker{ref: reference{w}, system: system, memo: map[memoKey]map[int][]float32{}}
}

// check compares run's captured logits of every request it captured with
// the reference's, and each token generated after them.
func (c *checker) check(run *runResult, reqs []*request) error {
	ids := make([]int, 0, len(run.logits))
	for id := range run.logits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		req := reqs[id]
		caught := run.logits[id]
		last := 0
		for p := range caught {
			last = max(last, p)
		}
		// The tokens up to the last position checked, and the one after.
		tokens := append(slices.Clone(req.prompt), run.outputs[id]...)[:last+2]
		want := c.recompute(id, req, tokens[:last+1], caught)
		positions := make([]int, 0, len(caught))
		for p := range caught {
			positions = append(positions, p)
		}
		slices.Sort(positions)
		for _, p := range positions {
			got, ref := caught[p], want[p]
			for t, g := range got {
				d := math.Abs(float64(g) - float64(ref[t]))
				if math.IsNaN(d) {
					d = math.Inf(1)
				}
				ratio := d / tolerance(ref[t])
				c.logits++
				if ratio > c.worst || c.worstAt == "" {
					c.worst, c.worstAt = ratio, fmt.Sprintf("%s run, %s, request %d, position %d, token %d: %v against %v", run.store, run.variant, id, p, t, g, ref[t])
				}
				if ratio > 1 {
					return fmt.Errorf("%w: %s run, %s, request %d, position %d: the logit of token %d is %v, the CPU's %v (tolerance %g relative or %g absolute)",
						errMismatch, run.store, run.variant, id, p, t, g, ref[t], relTol, absTol)
				}
			}
			first, second := topTwo(ref)
			if float64(first-second) <= tolerance(first) {
				c.ties++
				continue
			}
			c.tokens++
			if best := argmax(ref); int32(best) != tokens[p+1] {
				return fmt.Errorf("%w: %s run, %s, request %d, position %d: generated token %d, the CPU's greedy choice is %d (logits %v and %v, apart by more than the tolerance)",
					errMismatch, run.store, run.variant, id, p, tokens[p+1], best, ref[tokens[p+1]], first)
			}
		}
	}
	return nil
}

// recompute is the reference's logits at the positions of want, feeding
// tokens; a sequence seen before (the other run's, when both generated the
// same tokens) is not recomputed.
func (c *checker) recompute(id int, req *request, tokens []int32, want map[int][]float32) map[int][]float32 {
	key := memoKey{id, fmt.Sprint(tokens)}
	if got, ok := c.memo[key]; ok && covers(got, want) {
		return got
	}
	s := c.ref.w.s
	seq, from := newRefSeq(s), 0
	if len(c.system) > 0 && len(req.prompt) > len(c.system) && slices.Equal(req.prompt[:len(c.system)], c.system) {
		if c.prefix == nil {
			c.prefix = newRefSeq(s)
			for _, t := range c.system {
				c.ref.forward(c.prefix, t, nil)
			}
		}
		seq, from = c.prefix.clone(), len(c.system)
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
	if c.logits == 0 {
		return "nothing compared"
	}
	return fmt.Sprintf("%d logits compared, the nearest the tolerance at %.3g of it (%s); %d greedy tokens compared, all equal; %d not compared, their top two logits within the tolerance",
		c.logits, c.worst, c.worstAt, c.tokens, c.ties)
}
