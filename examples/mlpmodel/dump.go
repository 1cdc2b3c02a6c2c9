package mlpmodel

import (
	"fmt"

	"github.com/cudapool/cudapool/examples/dumpdir"
	"github.com/cudapool/cudapool/examples/floats"
)

// Manifest describes a -dump directory: enough to recompute the outputs
// from the files in another framework.
type Manifest struct {
	Format      string       `json:"format"`
	Layout      string       `json:"layout"`
	LayoutNote  string       `json:"layout_note"`
	Computation string       `json:"computation"`
	Seed        uint64       `json:"seed"`
	Tolerance   Tolerance    `json:"tolerance"`
	LayerOrder  string       `json:"layer_order"`
	Layers      []LayerFiles `json:"layers"`
	Batches     []BatchFiles `json:"batches"`
}

// Tolerance is RelTol and AbsTol.
type Tolerance struct {
	Relative float64 `json:"relative"`
	Absolute float64 `json:"absolute"`
}

// Tensor is one file: its name in the directory and its shape, [rows,
// columns] for a matrix.
type Tensor struct {
	File  string `json:"file"`
	Shape []int  `json:"shape"`
}

// LayerFiles are one layer's files.
type LayerFiles struct {
	Weights    Tensor `json:"weights"`
	Bias       Tensor `json:"bias"`
	Activation string `json:"activation"` // "relu" or "none"
}

// BatchFiles are one batch's input and output files.
type BatchFiles struct {
	Batch  int    `json:"batch"`
	Input  Tensor `json:"input"`
	Output Tensor `json:"output"`
}

// Batch is one batch to dump: its rows, its input and the output a device
// computed for it.
type Batch struct {
	Rows          int
	Input, Output []float32
}

// Dump writes p's parameters, each batch's input and output, and
// manifest.json describing them, into dir (made if missing), all as
// little-endian float32 files.
func Dump(dir string, p *Params, seed uint64, batches []Batch) error {
	mf := Manifest{
		Format:      "little-endian IEEE 754 float32, no header",
		Layout:      "column-major",
		LayoutNote:  "a [rows, columns] matrix holds element (i, j) at index i + j*rows: a column is contiguous, so a batch's columns are its requests one after another; in NumPy, np.fromfile(f, '<f4').reshape(columns, rows).T",
		Computation: "x_0 = input; x_l = activation_l(weights_l @ x_(l-1) + bias_l), bias_l added to every column; output = x_n. The GEMMs accumulate in FP32 (TF32 off); the outputs match a float64 computation rounded to float32 after each GEMM within the tolerance",
		LayerOrder:  "layers are applied in the order listed: the first takes the input, the last gives the output",
		Seed:        seed,
		Tolerance:   Tolerance{RelTol, AbsTol},
	}
	files := map[string][]byte{}
	for l := range Layers {
		act := "relu"
		if l == Layers-1 {
			act = "none"
		}
		lf := LayerFiles{
			Weights:    Tensor{fmt.Sprintf("layer%d.weights.f32", l+1), []int{p.Dims[l+1], p.Dims[l]}},
			Bias:       Tensor{fmt.Sprintf("layer%d.bias.f32", l+1), []int{p.Dims[l+1]}},
			Activation: act,
		}
		files[lf.Weights.File] = floats.Bytes(p.W(l))
		files[lf.Bias.File] = floats.Bytes(p.B(l))
		mf.Layers = append(mf.Layers, lf)
	}
	for _, b := range batches {
		bf := BatchFiles{
			Batch:  b.Rows,
			Input:  Tensor{fmt.Sprintf("batch%d.input.f32", b.Rows), []int{p.Dims[0], b.Rows}},
			Output: Tensor{fmt.Sprintf("batch%d.output.f32", b.Rows), []int{p.Dims[Layers], b.Rows}},
		}
		files[bf.Input.File] = floats.Bytes(b.Input)
		files[bf.Output.File] = floats.Bytes(b.Output)
		mf.Batches = append(mf.Batches, bf)
	}
	return dumpdir.Write(dir, files, mf)
}
