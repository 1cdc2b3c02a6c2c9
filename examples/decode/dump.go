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
	Format      string           `json:"format"`
	Layout      string           `json:"layout"`
	Model       modelInfo        `json:"model"`
	Computation string           `json:"computation"`
	Activations []activationInfo `json:"activations"`
	Seed        uint64           `json:"seed"`
	Tolerance   toleranceInfo    `json:"tolerance"`
	Weights     []weightFile     `json:"weights"`
	Variants    []variantFiles   `json:"variants"`
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

// activationInfo is one of a token's activations: its name in the
// computation, its type (where "float16", rounded to FP16, to nearest
// even, as it is made) and what it is.
type activationInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	What string `json:"what"`
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
	`x = embedding[:, t_p] + positions[:, p]. For each layer: attn_in = rmsnorm(x) * attn_norm; qkv = qkv_w @ attn_in, ` +
	`its rows Q (heads*64: head i at rows 64i..64i+63), then K and V (kv_heads*64 each); k and v are K and V rounded to FP16, kept for the positions after; ` +
	`for each head i, with g = i / (heads / kv_heads): attn_out_i = softmax_{s<=p}(q_i . k_g[s] * attention_scale) . v_g[s]; ` +
	`x = x + wo @ attn_out; ffn_in = rmsnorm(x) * ffn_norm; ffn_hidden = relu(w1 @ ffn_in); x = x + w2 @ ffn_hidden. ` +
	`Then final_in = rmsnorm(x) * final_norm and logits = (embedding^T @ final_in) * output_scale: the logits at position p predict t_(p+1), which greedy decoding takes as their argmax. ` +
	`rmsnorm(x) = x / sqrt(mean(x^2) + rms_eps). The weights are FP16; "activations" gives each activation's type: only k and v are rounded to FP16 (to nearest even), ` +
	`every other value is float32, the GEMMs accumulated in FP32 (or wider). ` +
	`The device keeps each float32 GEMM input as two FP16 halves, hi = f16(a) and lo = f16((a - hi) * 2048), and adds W @ lo / 2048 to W @ hi (FP16 GEMMs accumulating in FP32): within about 2^-23 of W @ a, as a float32 GEMM would be.`

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
		Activations: activationInfos(),
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

// activationInfos is activations as the manifest lists them.
func activationInfos() []activationInfo {
	out := make([]activationInfo, len(activations))
	for i, a := range activations {
		out[i] = activationInfo{Name: a.name, Type: "float32", What: a.what}
		if a.fp16 {
			out[i].Type = "float16"
		}
	}
	return out
}
