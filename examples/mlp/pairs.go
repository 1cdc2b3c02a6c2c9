package main

import (
	"cmp"
	"fmt"
	"slices"
)

// series are one configuration's timed runs at one batch size in one
// launch mode, in the order taken.
type series struct {
	name    string
	clients int
	runs    []measured
}

// summary is the series as one table row: the run with the median
// requests/s (the lower of the two middle ones where the count is even),
// its requests/s's range over the runs, and the device memory outside the
// pool of the run that took the most either way, so that a single run
// taking some shows.
func (s *series) summary() measured {
	sorted := slices.SortedFunc(slices.Values(s.runs), func(a, b measured) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
	m := sorted[(len(sorted)-1)/2]
	m.Name, m.clients, m.runs = s.name, s.clients, len(sorted)
	m.lo, m.hi = sorted[0].PerSecond, sorted[len(sorted)-1].PerSecond
	for _, r := range sorted {
		if abs(r.outside) > abs(m.outside) {
			m.outside = r.outside
		}
	}
	return m
}

func abs(n int64) int64 { return max(n, -n) }

// pairing is slots=n measured against cudaMallocAsync with as many
// requests in flight (clients of its own, at most -clients), one run of
// each after the other, -repeat times.
type pairing struct {
	slots, clients int
	// ratios are each repetition's slots requests/s over the baseline's
	// taken right after it.
	ratios []float64
}

// median is the median ratio: the mean of the two middle ones where the
// count is even.
func (p *pairing) median() float64 {
	r := slices.Sorted(slices.Values(p.ratios))
	return (r[(len(r)-1)/2] + r[len(r)/2]) / 2
}

// String is the median ratio and, past one repetition, the lowest and the
// highest.
func (p *pairing) String() string {
	if len(p.ratios) == 1 {
		return fmt.Sprintf("%.2fx", p.ratios[0])
	}
	return fmt.Sprintf("%.2fx [%.2f-%.2f]", p.median(), slices.Min(p.ratios), slices.Max(p.ratios))
}
