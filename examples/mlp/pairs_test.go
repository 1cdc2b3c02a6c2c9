package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestSummaryIsTheMedianRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		perSecond   []float64
		outside     []int64
		medianAt    int // the run whose figures the summary shows
		lo, hi      float64
		wantOutside int64
	}{
		{"one run", []float64{5}, []int64{0}, 0, 5, 5, 0},
		{"odd", []float64{3, 1, 2}, []int64{0, -5, 3}, 2, 1, 3, -5},
		{"even: the lower middle", []float64{4, 1, 3, 2}, []int64{0, 0, 7, 0}, 3, 1, 4, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := &series{name: "slots=2", clients: 8}
			for i, ps := range tc.perSecond {
				var r measured
				r.PerSecond, r.outside = ps, tc.outside[i]
				r.Service.P50 = time.Duration(i+1) * time.Millisecond
				se.runs = append(se.runs, r)
			}
			m := se.summary()
			assert.Equal(t, tc.perSecond[tc.medianAt], m.PerSecond)
			assert.Equal(t, se.runs[tc.medianAt].Service, m.Service, "the median run's latencies")
			assert.Equal(t, tc.lo, m.lo)
			assert.Equal(t, tc.hi, m.hi)
			assert.Equal(t, tc.wantOutside, m.outside, "the run that took the most either way")
			assert.Equal(t, len(tc.perSecond), m.runs)
			assert.Equal(t, "slots=2", m.Name)
			assert.Equal(t, 8, m.clients)
		})
	}
}

func TestPairingMedian(t *testing.T) {
	for _, tc := range []struct {
		ratios []float64
		median float64
		text   string
	}{
		{[]float64{1.004}, 1.004, "1.00x"},
		{[]float64{1.1, 0.9, 1.0}, 1.0, "1.00x [0.90-1.10]"},
		{[]float64{1, 4, 2, 3}, 2.5, "2.50x [1.00-4.00]"},
	} {
		p := pairing{slots: 2, clients: 2, ratios: tc.ratios}
		assert.InDelta(t, tc.median, p.median(), 1e-12, "%v", tc.ratios)
		assert.Equal(t, tc.text, p.String())
	}
}

// Each repetition runs slots=n, then cudaMallocAsync from n clients, one
// handle and stream a client, and the ratio is of those two runs.
func TestPairsRunAtTheSameConcurrency(t *testing.T) {
	lib, m := fakeModel(t)
	c := config{requests: 4, clients: 8, repeat: 3, slots: []int{2}, batches: []int{1, 8}, launches: []bool{true}, seed: 1}
	s := newSession(lib, m, c, io.Discard)
	require.NoError(t, s.measurePair(2, 2, true))
	for _, rows := range c.batches {
		require.Len(t, s.pairs[true][rows], 1)
		p := s.pairs[true][rows][0]
		assert.Equal(t, 2, p.slots)
		assert.Equal(t, 2, p.clients)
		require.Len(t, s.results[true][rows], 2)
		slots, base := s.results[true][rows][0], s.results[true][rows][1]
		assert.Equal(t, "slots=2", slots.name)
		assert.Equal(t, 8, slots.clients, "slots are loaded from -clients clients")
		assert.Equal(t, "cudaMallocAsync, 2 clients", base.name)
		require.Len(t, slots.runs, 3)
		require.Len(t, base.runs, 3)
		require.Len(t, p.ratios, 3)
		for i := range p.ratios {
			assert.Equal(t, 2, base.runs[i].clients, "as many requests in flight as slots")
			assert.Equal(t, 4, base.runs[i].Requests)
			assert.Equal(t, slots.runs[i].PerSecond/base.runs[i].PerSecond, p.ratios[i], "run %d", i)
		}
	}
	require.Len(t, s.setups, 2)
	assert.Equal(t, setup{"cudaMallocAsync, 2 clients", 2, s.setups[1].outside}, s.setups[1], "a handle a client")
	assert.Contains(t, s.nodes, "cudaMallocAsync, 2 clients")
}

// With fewer clients than slots, slots=N has as many requests in flight as
// clients: its baseline is cudaMallocAsync from all of them, which is then
// also the reference, not measured again.
func TestFewerClientsThanSlots(t *testing.T) {
	stdout, stderr := clitest.OK(t, run, "-runtime=fake", "-clients", "2", "-slots", "1,4", "-batches", "1", "-launch", "graph", "-requests", "4")
	assert.Contains(t, stdout, "slots=1 / 1 client  slots=4 / 2 clients")
	assert.Contains(t, stdout, "for reference, over cudaMallocAsync with 2 clients")
	assert.Contains(t, stderr, "slots=4 then cudaMallocAsync, 2 clients, run 1 of 1")
	assert.NotContains(t, stderr, "one CUDA graph a request, cudaMallocAsync, 2 clients, batch 1:", "the reference is the pair's baseline")
	assert.Contains(t, stderr, "one CUDA graph a request, mutex pool, batch 1:")
}

// The target is the lowest median of the pairs, not the lowest single
// ratio, and says where it is.
func TestTargetIsTheWorstMedianPair(t *testing.T) {
	s := &session{c: config{requests: 10, clients: 8, repeat: 3, slots: []int{1, 8}, batches: []int{1, 32}, launches: []bool{true, false}},
		results: map[bool]map[int][]*series{true: {}, false: {}},
		pairs: map[bool]map[int][]pairing{
			true:  {1: {{1, 1, []float64{1.2, 1.3, 1.25}}, {8, 8, []float64{0.5, 1.4, 1.3}}}, 32: {{1, 1, []float64{1.1, 1.1, 1.1}}, {8, 8, []float64{1.0, 1.01, 0.99}}}},
			false: {1: {{1, 1, []float64{2, 2, 2}}, {8, 8, []float64{1, 1, 1}}}, 32: {{1, 1, []float64{0.97, 0.98, 1.02}}, {8, 8, []float64{1.05, 1.0, 1.0}}}},
		}}
	var out bytes.Buffer
	s.printTargets(&out, 0, nil, nil)
	assert.Contains(t, out.String(), "same launch mode (the median of 3 such pairs [lowest-highest]): 0.98x [0.97-1.02] at least, at slots=1 against cudaMallocAsync, 1 client, call by call, batch 32 (target at least 1.00x)")
}
