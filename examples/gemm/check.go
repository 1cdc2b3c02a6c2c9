package main

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cublas"
)

// samples is how many elements of each result are checked against the CPU.
const samples = 256

// check compares samples elements of c, the GEMM's result as t's elements,
// with the CPU's, computed in float64 from a and b. The tolerance is the one
// package cublas documents of CUDA against the exact result: (K+2)·2⁻²³·S +
// u·|c|, S the sum of the products' magnitudes and u the unit roundoff of
// C's type. The elements are spread over the matrix, the first and the last included.
func check(s shape, a, b []float32, c []byte) error {
	u := math.Ldexp(1, -24)
	switch s.t {
	case cublas.Float16:
		u = math.Ldexp(1, -11)
	case cublas.BFloat16:
		u = math.Ldexp(1, -8)
	}
	for i := range samples {
		r, col := (i*7919)%s.m, (i*104729)%s.n
		switch i {
		case 0:
			r, col = 0, 0
		case 1:
			r, col = s.m-1, s.n-1
		}
		var exact, mag float64
		for l := range s.k {
			p := float64(a[r+l*s.m]) * float64(b[l+col*s.k])
			exact += p
			mag += math.Abs(p)
		}
		got := float64(decode(c, s.t, r+col*s.m))
		tol := float64(s.k+2)*math.Ldexp(1, -23)*mag + u*math.Abs(exact)
		if !(math.Abs(got-exact) <= tol) {
			return fmt.Errorf("%s: C(%d, %d) is %g, the CPU's %g: off by %.3g, beyond the tolerance %.3g", s.name, r, col, got, exact, math.Abs(got-exact), tol)
		}
	}
	return nil
}
