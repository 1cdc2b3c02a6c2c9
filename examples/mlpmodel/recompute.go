package mlpmodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/cudapool/cudapool/examples/dumpdir"
)

// CheckDump recomputes every batch of the -dump directory dir from its
// files and manifest.json alone, as another framework would (in float64,
// each GEMM rounded to float32), and compares the outputs dumped with it
// within the manifest's tolerance. It returns the manifest, and an error
// naming the first file or output that does not hold.
func CheckDump(dir string) (*Manifest, error) {
	var mf Manifest
	if err := dumpdir.Read(dir, &mf); err != nil {
		return nil, err
	}
	read := func(tn Tensor) ([]float64, error) {
		b, err := os.ReadFile(filepath.Join(dir, tn.File))
		if err != nil {
			return nil, err
		}
		n := 1
		for _, d := range tn.Shape {
			n *= d
		}
		if len(b) != 4*n {
			return nil, fmt.Errorf("%s: %d B, want %d B for shape %v", tn.File, len(b), 4*n, tn.Shape)
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return v, nil
	}
	for _, bf := range mf.Batches {
		x, err := read(bf.Input)
		if err != nil {
			return nil, err
		}
		cols := bf.Input.Shape[1]
		for _, l := range mf.Layers {
			w, err := read(l.Weights)
			if err != nil {
				return nil, err
			}
			bias, err := read(l.Bias)
			if err != nil {
				return nil, err
			}
			rows, k := l.Weights.Shape[0], l.Weights.Shape[1]
			y := make([]float64, rows*cols)
			for c := range cols {
				for i := range rows {
					var acc float64
					for j := range k {
						acc += w[i+j*rows] * x[j+c*k]
					}
					v := float64(float32(acc)) + bias[i]
					if l.Activation == "relu" {
						v = max(v, 0)
					}
					y[i+c*rows] = v
				}
			}
			x = y
		}
		got, err := read(bf.Output)
		if err != nil {
			return nil, err
		}
		if len(got) != len(x) {
			return nil, fmt.Errorf("batch %d: %d outputs, the layers give %d", bf.Batch, len(got), len(x))
		}
		for i := range got {
			if d := math.Abs(got[i] - x[i]); d > max(mf.Tolerance.Absolute, mf.Tolerance.Relative*math.Abs(x[i])) {
				return nil, fmt.Errorf("batch %d, output %d: %v, recomputed %v", bf.Batch, i, got[i], x[i])
			}
		}
	}
	return &mf, nil
}
