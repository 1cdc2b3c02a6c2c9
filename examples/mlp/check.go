package main

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// The tolerance every output is held to against the CPU's reference: within
// relTol of it, or absTol where the reference is near 0.
const (
	relTol = 1e-4
	absTol = 1e-5
)

// errMismatch is an output out of tolerance of the CPU's.
var errMismatch = errors.New("output differs from the CPU reference")

// deviation is how far one output is from the reference: its absolute and
// relative difference, and their ratio to the tolerance (at most 1 passes).
type deviation struct {
	abs, rel, ratio float64
	got, want       float32
}

func deviationOf(got, want float32) deviation {
	d := math.Abs(float64(got) - float64(want))
	w := math.Abs(float64(want))
	dv := deviation{abs: d, ratio: d / math.Max(absTol, relTol*w), got: got, want: want}
	if w > 0 {
		dv.rel = d / w
	}
	if math.IsNaN(d) {
		dv.ratio = math.Inf(1)
	}
	return dv
}

// worst keeps the largest deviations seen, by concurrent checks.
type worst struct {
	mu       sync.Mutex
	abs, rel float64
	ratio    deviation // the one nearest failing
	checked  int       // outputs compared
}

func (w *worst) add(d deviation) {
	w.abs, w.rel = max(w.abs, d.abs), max(w.rel, d.rel)
	if d.ratio > w.ratio.ratio || w.checked == 0 {
		w.ratio = d
	}
	w.checked++
}

// compare checks every element of got against want, adds their deviations
// to w, and names the first out of tolerance.
func (w *worst) compare(got, want []float32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for i := range want {
		d := deviationOf(got[i], want[i])
		w.add(d)
		if d.ratio > 1 && first == nil {
			first = fmt.Errorf("%w: element %d is %v, want %v (off by %.3g, tolerance %g relative or %g absolute)", errMismatch, i, got[i], want[i], d.abs, relTol, absTol)
		}
	}
	return first
}

// String reports the worst deviations.
func (w *worst) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d outputs compared; worst absolute %.3g, worst relative %.3g; nearest the tolerance: %v against %v, %.3g of the tolerance (at most 1 passes)",
		w.checked, w.abs, w.rel, w.ratio.got, w.ratio.want, w.ratio.ratio)
}
