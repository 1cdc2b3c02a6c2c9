package main

import (
	"math"
	"math/rand/v2"
)

// request is one request of a workload: its prompt and how many tokens to
// generate (the decoding ignores any end-of-sequence token, as throughput
// benchmarks do, so that every run generates the same tokens).
type request struct {
	id     int
	prompt []int32
	outLen int
}

// workloadConfig is what the workload is drawn from.
type workloadConfig struct {
	requests     int
	promptMedian int     // tokens of a user prompt, median
	outputMedian int     // tokens generated, median
	sigma        float64 // the log-normal's shape: the spread of log(length)
	system       int     // tokens of the shared system prompt
	vocab, ctx   int
}

// limits are the longest user prompt and output: each half of what the
// context leaves after the system prompt, so that the longest request of
// the shared variant fills the context.
func (c workloadConfig) limits() (prompt, output int) {
	half := (c.ctx - c.system) / 2
	return half, half
}

// newWorkload draws the requests from seed with a PCG (math/rand/v2,
// seeded with seed and 0x776f726b6c6f6164): first the system prompt's
// tokens, then for each request its user prompt's length, its output's
// length and its prompt's tokens. A length is log-normal, as the lengths
// of chat traffic are (heavy-tailed: most short, a few long): round(median
// × exp(sigma × Z)), Z standard normal, clamped to 1 .. limits(). Tokens
// are uniform over the vocabulary. plain holds the user prompts alone;
// shared the same requests, each prompt after the same system prompt.
func newWorkload(c workloadConfig, seed uint64) (plain, shared []*request) {
	r := rand.New(rand.NewPCG(seed, 0x776f726b6c6f6164))
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(r.IntN(c.vocab))
		}
		return t
	}
	length := func(median, most int) int {
		n := int(math.Round(float64(median) * math.Exp(c.sigma*r.NormFloat64())))
		return min(max(n, 1), most)
	}
	system := tokens(c.system)
	maxPrompt, maxOutput := c.limits()
	for i := range c.requests {
		p := length(c.promptMedian, maxPrompt)
		o := length(c.outputMedian, maxOutput)
		user := tokens(p)
		plain = append(plain, &request{id: i, prompt: user, outLen: o})
		shared = append(shared, &request{id: i, prompt: append(append([]int32(nil), system...), user...), outLen: o})
	}
	return plain, shared
}
