package mlpmodel

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// The tolerance every output is held to against the CPU's reference: within
// RelTol of it, or AbsTol where the reference is near 0.
const (
	RelTol = 1e-4
	AbsTol = 1e-5
)

// ErrMismatch is an output out of tolerance of the CPU's.
var ErrMismatch = errors.New("output differs from the CPU reference")

// Deviation is how far one output is from the reference: its absolute and
// relative difference, and their ratio to the tolerance (at most 1 passes).
type Deviation struct {
	Abs, Rel, Ratio float64
	Got, Want       float32
}

// DeviationOf is got's deviation from want.
func DeviationOf(got, want float32) Deviation {
	d := math.Abs(float64(got) - float64(want))
	w := math.Abs(float64(want))
	dv := Deviation{Abs: d, Ratio: d / math.Max(AbsTol, RelTol*w), Got: got, Want: want}
	if w > 0 {
		dv.Rel = d / w
	}
	if math.IsNaN(d) {
		dv.Ratio = math.Inf(1)
	}
	return dv
}

// Worst keeps the largest deviations seen, by concurrent checks. The zero
// Worst is ready.
type Worst struct {
	mu       sync.Mutex
	abs, rel float64
	nearest  Deviation // the one nearest failing
	checked  int       // outputs compared
}

func (w *Worst) add(d Deviation) {
	w.abs, w.rel = max(w.abs, d.Abs), max(w.rel, d.Rel)
	if d.Ratio > w.nearest.Ratio || w.checked == 0 {
		w.nearest = d
	}
	w.checked++
}

// Compare checks every element of got against want, adds their deviations
// to w, and names the first out of tolerance (ErrMismatch).
func (w *Worst) Compare(got, want []float32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for i := range want {
		d := DeviationOf(got[i], want[i])
		w.add(d)
		if d.Ratio > 1 && first == nil {
			first = fmt.Errorf("%w: element %d is %v, want %v (off by %.3g, tolerance %g relative or %g absolute)", ErrMismatch, i, got[i], want[i], d.Abs, RelTol, AbsTol)
		}
	}
	return first
}

// Ratio is the deviation nearest failing as a fraction of the tolerance:
// at most 1 passes.
func (w *Worst) Ratio() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nearest.Ratio
}

// String reports the worst deviations.
func (w *Worst) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d outputs compared; worst absolute %.3g, worst relative %.3g; nearest the tolerance: %v against %v, %.3g of the tolerance (at most 1 passes)",
		w.checked, w.abs, w.rel, w.nearest.Got, w.nearest.Want, w.nearest.Ratio)
}
