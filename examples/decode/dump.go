package main

import (
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/examples/dumpdir"
	"github.com/cudapool/cudapool/examples/floats"
)

// manifest describes a -dump directory: enough to recompute the logits
// from the files in another framework.
type manifest struct {
	Format      string         `json:"format"`
	Layout      string         `json:"layout"`
	Model       modelInfo      `json:"model"`
	Computation string         `json:"computation"`
	Seed        uint64         `json:"seed"`
	Tolerance   toleranceInfo  `json:"tolerance"`
	Weights     []weightFile   `json:"weights"`
	Variants    []variantFiles `json:"variants"`
}

type modelInfo struct {
	Layers      int     `json:"layers"`
	Width       int     `json:"width"`
	Heads       int     `json:"heads"`
	KVHeads     int     `json:"kv_heads"`
	HeadDim     int     `json:"head_dim"`
	FFN         int     `json:"ffn"`
	Vocab       int     `json:"vocab"`
	Context     int     `json:"context"`
	RMSEps      float64 `json:"rms_eps"`
	AttnScale   float64 `json:"attention_scale"`
	OutputScale float64 `json:"output_scale"`
}

type toleranceInfo struct {
	Relative float64 `json:"relative"`
	Absolute float64 `json:"absolute"`
}

// weightFile is one tensor: rows × cols, column-major, FP16.
type weightFile struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Shape []int  `json:"shape"`
}

type variantFiles struct {
	Name     string         `json:"name"`
	System   int            `json:"system_prompt_tokens"`
	Prompts  string         `json:"prompts"`
	Outputs  string         `json:"outputs"`
	Requests []requestFiles `json:"requests"`
	Steps    []stepFiles    `json:"steps"`
}

type requestFiles struct {
	ID           int `json:"id"`
	PromptOffset int `json:"prompt_offset"`
	PromptLen    int `json:"prompt_len"`
	OutputOffset int `json:"output_offset"`
	OutputLen    int `json:"output_len"`
}

type stepFiles struct {
	Step   int       `json:"step"`
	Logits string    `json:"logits"`
	Shape  []int     `json:"shape"`
	Rows   []rowInfo `json:"rows"`
}

type rowInfo struct {
	Request  int `json:"request"`
	Position int `json:"position"`
}

const dumpComputation = `For a sequence of tokens t_0..t_n (a request's prompt, then its outputs), position p: ` +
	`x = embedding[:, t_p] + positions[:, p] (float32). For each layer: h = f16(rmsnorm(x) * attn_norm); qkv = qkv_w @ h, ` +
	`its rows Q (heads*64: head i at rows 64i..64i+63), then K and V (kv_heads*64 each); K and V are rounded to FP16 and kept for the positions after; ` +
	`for each head i, with g = i / (heads / kv_heads): a_i = f16(softmax_{s<=p}(q_i . k_g[s] * attention_scale) . v_g[s]); ` +
	`x = x + wo @ a; h = f16(rmsnorm(x) * ffn_norm); x = x + w2 @ f16(relu(w1 @ h)). ` +
	`Then logits = (embedding^T @ f16(rmsnorm(x) * final_norm)) * output_scale: the logits at position p predict t_(p+1), which greedy decoding takes as their argmax. ` +
	`rmsnorm(x) = x / sqrt(mean(x^2) + rms_eps); f16() rounds to FP16, to nearest even; everything else is float32, the GEMMs accumulated in FP32 (or wider).`

// dump writes the weights, each variant's prompts and the tokens its paged
// run generated, the logits of the steps dumpSteps names, and the
// manifest, into c.dump.
func dump(c config, w *weights, variants []variant, results []*runResult) error {
	s := w.s
	mf := manifest{
		Format: "little-endian, no header: weights FP16 (.f16), tokens int32 (.i32), logits float32 (.f32)",
		Layout: "a weight of shape [rows, cols] is column-major, element (i, j) at index i + j*rows (in NumPy, np.fromfile(f, '<f2').reshape(cols, rows).T); " +
			"embedding is [width, vocab], a column a token; positions [width, context]; a logits file of shape [rows, vocab] holds a row after another",
		Model: modelInfo{Layers: s.layers, Width: s.width, Heads: s.heads, KVHeads: s.kvHeads, HeadDim: headDim, FFN: s.ffn, Vocab: s.vocab, Context: s.ctx,
			RMSEps: rmsEps, AttnScale: attnScale, OutputScale: float64(lmScale(s))},
		Computation: dumpComputation,
		Seed:        c.seed,
		Tolerance:   toleranceInfo{relTol, absTol},
	}
	files := map[string][]byte{}
	for _, t := range w.all {
		f := t.name + ".f16"
		files[f] = halfBytes(w.bits[t.off : t.off+t.size()])
		mf.Weights = append(mf.Weights, weightFile{Name: t.name, File: f, Shape: []int{t.rows, t.cols}})
	}
	for _, va := range variants {
		var run *runResult
		for _, r := range results {
			if r.variant == va.name && r.store == "paged" {
				run = r
			}
		}
		slug := strings.ReplaceAll(va.name, " ", "_")
		vf := variantFiles{Name: va.name, System: va.system, Prompts: slug + ".prompts.i32", Outputs: slug + ".outputs.i32"}
		var prompts, outputs []int32
		for _, r := range va.reqs {
			o := run.outputs[r.id]
			vf.Requests = append(vf.Requests, requestFiles{ID: r.id, PromptOffset: len(prompts), PromptLen: len(r.prompt), OutputOffset: len(outputs), OutputLen: len(o)})
			prompts = append(prompts, r.prompt...)
			outputs = append(outputs, o...)
		}
		files[vf.Prompts], files[vf.Outputs] = int32Bytes(prompts), int32Bytes(outputs)
		for _, st := range run.dumped {
			sf := stepFiles{Step: st.step, Logits: fmt.Sprintf("%s.step%d.logits.f32", slug, st.step), Shape: []int{len(st.rows), s.vocab}}
			var all []float32
			for _, row := range st.rows {
				sf.Rows = append(sf.Rows, rowInfo{row.request, row.position})
				all = append(all, row.logits...)
			}
			files[sf.Logits] = floats.Bytes(all)
			vf.Steps = append(vf.Steps, sf)
		}
		mf.Variants = append(mf.Variants, vf)
	}
	return dumpdir.Write(c.dump, files, mf)
}
