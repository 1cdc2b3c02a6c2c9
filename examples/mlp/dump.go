package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// manifest describes a -dump directory: enough to recompute the outputs
// from the files in another framework.
type manifest struct {
	Format      string       `json:"format"`
	Layout      string       `json:"layout"`
	LayoutNote  string       `json:"layout_note"`
	Computation string       `json:"computation"`
	Seed        uint64       `json:"seed"`
	Tolerance   tolerance    `json:"tolerance"`
	LayerOrder  string       `json:"layer_order"`
	Layers      []layerFiles `json:"layers"`
	Batches     []batchFiles `json:"batches"`
}

type tolerance struct {
	Relative float64 `json:"relative"`
	Absolute float64 `json:"absolute"`
}

// tensor is one file: its name in the directory and its shape, [rows,
// columns] for a matrix.
type tensor struct {
	File  string `json:"file"`
	Shape []int  `json:"shape"`
}

type layerFiles struct {
	Weights    tensor `json:"weights"`
	Bias       tensor `json:"bias"`
	Activation string `json:"activation"` // "relu" or "none"
}

type batchFiles struct {
	Batch  int    `json:"batch"`
	Input  tensor `json:"input"`
	Output tensor `json:"output"`
}

// captured keeps a request's output.
type captured struct {
	request
	got []byte
}

func (x *captured) read(out []byte) error {
	x.got = append([]byte(nil), out[:4*len(x.want)]...)
	return x.request.read(out)
}

// dump writes the parameters, the first input of each batch size and the
// output one slot computed for it, all compared with the CPU's, and the
// manifest, into dir.
func (s *session) dump(dir string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-dump: %w", err)
	}
	b, err := newSlotsBackend(s.m, s.lib, 1, s.c.batches, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	mf := manifest{
		Format:      "little-endian IEEE 754 float32, no header",
		Layout:      "column-major",
		LayoutNote:  "a [rows, columns] matrix holds element (i, j) at index i + j*rows: a column is contiguous, so a batch's columns are its requests one after another; in NumPy, np.fromfile(f, '<f4').reshape(columns, rows).T",
		Computation: "x_0 = input; x_l = activation_l(weights_l @ x_(l-1) + bias_l), bias_l added to every column; output = x_n. The GEMMs accumulate in FP32 (TF32 off); the outputs match a float64 computation rounded to float32 after each GEMM within the tolerance",
		LayerOrder:  "layers are applied in the order listed: the first takes the input, the last gives the output",
		Seed:        s.c.seed,
		Tolerance:   tolerance{relTol, absTol},
	}
	files := map[string][]float32{}
	for l := range layers {
		k, mOut := s.m.dims[l], s.m.dims[l+1]
		act := "relu"
		if l == layers-1 {
			act = "none"
		}
		lf := layerFiles{
			Weights:    tensor{fmt.Sprintf("layer%d.weights.f32", l+1), []int{mOut, k}},
			Bias:       tensor{fmt.Sprintf("layer%d.bias.f32", l+1), []int{mOut}},
			Activation: act,
		}
		files[lf.Weights.File] = s.m.params[s.m.offW[l] : s.m.offW[l]+mOut*k]
		files[lf.Bias.File] = s.m.params[s.m.offB[l] : s.m.offB[l]+mOut]
		mf.Layers = append(mf.Layers, lf)
	}
	for _, rows := range s.c.batches {
		w := s.loads[rows]
		x := &captured{request: request{in: w.inputs[0], want: w.want[0], full: &s.worst}}
		if _, err := b.serve(context.Background(), 0, rows, x); err != nil {
			return fmt.Errorf("-dump, batch %d: %w", rows, err)
		}
		bf := batchFiles{
			Batch:  rows,
			Input:  tensor{fmt.Sprintf("batch%d.input.f32", rows), []int{s.m.dims[0], rows}},
			Output: tensor{fmt.Sprintf("batch%d.output.f32", rows), []int{s.m.dims[layers], rows}},
		}
		files[bf.Input.File] = floatsOf(w.inputs[0])
		files[bf.Output.File] = floatsOf(x.got)
		mf.Batches = append(mf.Batches, bf)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), floatBytes(v), 0o644); err != nil {
			return fmt.Errorf("-dump: %w", err)
		}
	}
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(mf); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), j.Bytes(), 0o644); err != nil {
		return fmt.Errorf("-dump: %w", err)
	}
	return nil
}
