package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli/clitest"
	"github.com/cudapool/cudapool/examples/dumpdir"
)

func TestDefaultRunOnTheFake(t *testing.T) {
	if raceEnabled {
		t.Skip("the plain run covers the default flags; under the race detector they take minutes, and TestServesUnderMemcheck runs instead")
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake"}, &out, &errOut), errOut.String())
	s := out.String()
	for _, want := range []string{
		"model: 2 layers, width 128, 2 heads of 64 (1 KV heads), FFN 256, vocabulary 256, context 256",
		"plain, paged: 24 requests", "plain, contiguous: 24 requests",
		"shared system prompt, paged: 24 requests", "shared system prompt, contiguous: 24 requests",
		"KV utilization (bytes of tokens over the bytes taken for sequences",
		"time per output token p50", "most sequences at once:",
		"device memory taken outside the pool during the run (drops of cudaMemGetInfo's free memory after each step, added up): 0 B",
		"the baseline generated the same tokens for 24 of 24 requests",
		"targets (the issue's, on a GPU):",
		"the CPU's own spread at the same logits",
		"(fake runtime: not a GPU timing)",
	} {
		assert.Contains(t, s, want)
	}
	// The fake's kernels compute as the reference does but for the
	// GEMMs, which sum the activations' two FP16 halves where the
	// reference multiplies float32s: well inside the tolerance, as far
	// from the reference as a second CPU recomputation is.
	worst := regexp.MustCompile(`(\d+) out of tolerance, the worst at ([0-9.e-]+) of the tolerance`).FindAllStringSubmatch(s, -1)
	require.Len(t, worst, 4, "the device's and the CPU's spread, in each variant")
	for _, m := range worst {
		assert.Equal(t, "0", m[1])
		r, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		assert.Less(t, r, 0.3, m[0])
	}
	assert.NotContains(t, s, "dumped to")
	assert.Regexp(t, `shared system prompt, paged: .*\n(.*\n){4}  prefix hits: [1-9]\d* prompt tokens`, s, "the system prompt's pages are found cached")
	assert.Regexp(t, `preempted: ([1-9]\d*) swapped out to the pinned arena \([1-9]\d* pages, [0-9.]+ KiB\), ([1-9]\d*) swapped back in \([1-9]\d* pages copied`, s, "the default KV memory runs short: sequences are swapped out and back")
	assert.Regexp(t, `plain: most at once [0-9.]+x the baseline's \(target 2.5x\): \d+, bounded by the KV pages, against 2, bounded by the baseline's maximum-length slots \(-kvseqs\)`, s)
	assert.Regexp(t, `plain: tokens/s [0-9.]+x the baseline's \(target 2x\) = [0-9.]+x fewer steps \((\d+) against (\d+); a run takes at least \d+, the longest output\)`, s)
	most := regexp.MustCompile(`most sequences at once: (\d+)`).FindAllStringSubmatch(s, -1)
	require.Len(t, most, 4)
	paged, _ := strconv.Atoi(most[0][1])
	base, _ := strconv.Atoi(most[1][1])
	assert.Equal(t, 2, base, "the baseline holds -kvseqs sequences")
	assert.GreaterOrEqual(t, paged, 5*base, "the same bytes in pages hold many more of the workload's short sequences")
	assert.Contains(t, errOut.String(), "decode: plain, paged: 24 requests...", "progress on stderr")
}

// A weight the device has and the CPU's reference does not shows in the
// logits, and the run fails, at its end: every variant runs and is
// checked, and the report and the dump are written first.
func TestAWrongWeightIsCaught(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	code := runWith([]string{"-runtime=fake", "-requests", "2", "-system", "32", "-dump", dir}, &out, &errOut, func(c *config) { c.corrupt = true })
	assert.Equal(t, 1, code)
	for _, run := range []string{"paged run, plain", "contiguous run, plain", "paged run, shared system prompt", "contiguous run, shared system prompt"} {
		assert.Regexp(t, `differs from the CPU reference: `+run+`: \d+ of \d+ logits out of tolerance`, errOut.String())
	}
	assert.Regexp(t, `checked against the CPU, plain .*: \d+ logits compared: [1-9]\d* out of tolerance, the worst at`, out.String())
	assert.Contains(t, out.String(), "checked against the CPU, shared system prompt")
	assert.Contains(t, out.String(), "dumped to "+dir)
	assert.FileExists(t, filepath.Join(dir, "manifest.json"))
}

// A second recomputation summing in float32 comes near the first but not
// to it: the spread the report gives beside the device's is measured, not
// zero by construction.
func TestTheFloat32RecomputationIsNearTheFirst(t *testing.T) {
	w := newWeights(smallShape, 1)
	exact, alt := reference{w: w}, reference{w: w, sum32: true}
	a, b := newRefSeq(smallShape), newRefSeq(smallShape)
	la, lb := make([]float32, smallShape.vocab), make([]float32, smallShape.vocab)
	var d drift
	for p := range 40 {
		tok := int32(p * 7 % smallShape.vocab)
		exact.forward(a, tok, la)
		alt.forward(b, tok, lb)
		for i := range la {
			d.add(lb[i], la[i], func() string { return "" })
		}
	}
	assert.Positive(t, d.sum2, "float32 sums round otherwise than float64's")
	assert.Less(t, d.worst, 1.0, "within the tolerance on the small model")
}

// On a strict fake (memcheck on, leaks checked) every page a kernel reads
// or writes is one its sequence holds, through preemption and swapping and
// prefix sharing, and everything is given back.
func TestServesUnderMemcheck(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	lib, err := cublas.Open(f)
	require.NoError(t, err)
	w := newWeights(smallShape, 3)
	e, err := newEngine(f, lib, w, engineConfig{kvPages: smallShape.ctx / pageTokens, maxBatch: 8, swapPages: 2})
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.close()) }()
	wc := workloadConfig{requests: 10, promptMedian: 24, outputMedian: 24, sigma: 1, system: 48, vocab: smallShape.vocab, ctx: smallShape.ctx}
	_, shared := newWorkload(wc, 3)
	ch := newChecker(w, shared[0].prompt[:wc.system])
	opt := runOptions{checked: map[int]bool{0: true, 5: true, 9: true}, checkSteps: 1 << 20, system: wc.system}
	res, err := e.serve(newPaged(e), shared, opt)
	require.NoError(t, err)
	require.NoError(t, ch.check(res, shared))
	assert.Positive(t, res.hitTokens)
	// 16 pages for 8 rows of requests of 48 tokens and more, 2 host pages
	// to swap to: a sequence swaps out only the pages it holds alone, not
	// the system prompt's it shares, so that 2 fill.
	assert.Positive(t, res.preemptSwap, "swapped out")
	assert.Positive(t, res.preemptRecompute, "freed to be recomputed, the swap space full")
	base, err := e.serve(newContiguous(e), shared, opt)
	require.NoError(t, err)
	require.NoError(t, ch.check(base, shared))
	assert.Equal(t, len(shared), sameOutputs(res, base))
	assert.Equal(t, 0, e.cache.Stats().Seqs, "every sequence freed")
}

// Sequences preempted to the pinned arena and swapped back in generate
// what they generate when nothing is swapped: the same tokens and, the
// fake's GEMMs summing a column alike whatever the batch, the same logits,
// which are the CPU's.
func TestSwappedSequencesGenerateWhatUnswappedOnesDo(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	lib, err := cublas.Open(f)
	require.NoError(t, err)
	w := newWeights(smallShape, 4)
	wc := workloadConfig{requests: 12, promptMedian: 16, outputMedian: 40, sigma: 0.5, system: 32, vocab: smallShape.vocab, ctx: smallShape.ctx}
	_, reqs := newWorkload(wc, 4)
	all := map[int]bool{}
	for _, r := range reqs {
		all[r.id] = true
	}
	serve := func(kvPages int) *runResult {
		e, err := newEngine(f, lib, w, engineConfig{kvPages: kvPages, maxBatch: len(reqs), swapPages: 4 * kvPages})
		require.NoError(t, err)
		defer func() { assert.NoError(t, e.close()) }()
		res, err := e.serve(newPaged(e), reqs, runOptions{checked: all, checkSteps: 1 << 20, system: wc.system})
		require.NoError(t, err)
		return res
	}
	tight, ample := serve(16), serve(16*len(reqs))
	require.Zero(t, ample.preemptSwap+ample.preemptRecompute, "nothing is preempted with a page table's worth of pages a request")
	require.NotEmpty(t, tight.swappedIDs, "16 pages for 12 requests of 60 tokens and more: sequences are swapped out")
	assert.Zero(t, tight.preemptRecompute, "the swap space holds every preempted sequence")
	assert.Equal(t, tight.preemptSwap, tight.resumed, "every sequence swapped out comes back")
	assert.Positive(t, tight.swapIns)
	for id := range tight.swappedIDs {
		assert.Equal(t, ample.outputs[id], tight.outputs[id], "request %d's tokens", id)
		assert.Equal(t, ample.logits[id], tight.logits[id], "request %d's logits", id)
	}
	require.NoError(t, newChecker(w, reqs[0].prompt[:wc.system]).check(tight, reqs))
}

func TestDumpRoundTrips(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-requests", "6", "-system", "32", "-dump", dir)
	assert.Contains(t, stdout, "dumped to "+dir)
	var mf manifest
	require.NoError(t, dumpdir.Read(dir, &mf))
	require.Len(t, mf.Variants, 2)
	m := newFileModel(t, dir, mf)
	compared, worst := 0, 0.0
	for _, v := range mf.Variants {
		prompts, outputs := m.int32s(v.Prompts), m.int32s(v.Outputs)
		require.NotEmpty(t, v.Steps)
		for _, st := range v.Steps {
			logits := m.float32s(st.Logits)
			require.Len(t, logits, len(st.Rows)*mf.Model.Vocab)
			for i, row := range st.Rows {
				rq := v.Requests[row.Request]
				tokens := append(append([]int32(nil), prompts[rq.PromptOffset:rq.PromptOffset+rq.PromptLen]...), outputs[rq.OutputOffset:rq.OutputOffset+rq.OutputLen]...)
				want := m.logits(tokens[:row.Position+1])
				got := logits[i*mf.Model.Vocab : (i+1)*mf.Model.Vocab]
				for k := range want {
					tol := max(mf.Tolerance.Absolute, mf.Tolerance.Relative*math.Abs(want[k]))
					require.InDelta(t, want[k], got[k], tol, "%s, step %d, request %d, position %d, token %d", v.Name, st.Step, row.Request, row.Position, k)
					worst = max(worst, math.Abs(want[k]-float64(got[k]))/tol)
				}
				best := 0
				for k := range want {
					if want[k] > want[best] {
						best = k
					}
				}
				if row.Position+1 < len(tokens) {
					assert.Equal(t, int32(best), tokens[row.Position+1], "the greedy token")
				}
				compared++
			}
		}
	}
	assert.Greater(t, compared, 10)
	assert.Less(t, worst, 0.3, "the worst logit's difference over its tolerance: well inside it")
}

// The reference keeps each activation as the manifest says: the FP16 ones
// (the keys and values) hold FP16 values only, and the float32 ones are
// not rounded to FP16; it makes every activation the manifest lists, and
// no other.
func TestTheReferenceRoundsWhereTheManifestSays(t *testing.T) {
	w := newWeights(smallShape, 2)
	made := map[string]struct{ all16, any32 bool }{}
	ref := reference{w: w, observe: func(name string, v []float32) {
		m, seen := made[name]
		if !seen {
			m.all16 = true
		}
		for _, x := range v {
			if f16(x) == x {
				continue
			}
			m.all16, m.any32 = false, true
		}
		made[name] = m
	}}
	seq := newRefSeq(smallShape)
	logits := make([]float32, smallShape.vocab)
	for p := range 20 {
		ref.forward(seq, int32(p*11%smallShape.vocab), logits)
	}
	infos := activationInfos()
	require.Len(t, made, len(infos), "every activation made is listed")
	for _, a := range infos {
		m, ok := made[a.Name]
		require.True(t, ok, "%s is made", a.Name)
		switch a.Type {
		case "float16":
			assert.True(t, m.all16, "%s: FP16 values only", a.Name)
		case "float32":
			assert.True(t, m.any32, "%s: not rounded to FP16", a.Name)
		default:
			t.Errorf("%s: type %q", a.Name, a.Type)
		}
	}
}

// split's halves give back the float32 within 2^-23 of it, for magnitudes
// from 2^-13 to 2^15.
func TestSplitKeepsFloat32Precision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := float32(math.Ldexp(1+r.Float64(), r.IntN(28)-13))
		if r.IntN(2) == 0 {
			v = -v
		}
		hi, lo := split(v)
		require.Equal(t, hi, f16(hi))
		require.Equal(t, lo, f16(lo))
		got := float64(hi) + float64(lo)/loScale
		require.LessOrEqual(t, math.Abs(got-float64(v)), math.Ldexp(math.Abs(float64(v)), -23), "%v: %v + %v/%d", v, hi, lo, loScale)
	}
}

// fileModel is the model read back from a dump, computed from the
// manifest's description alone, in float64 but for the activations it
// lists as FP16.
type fileModel struct {
	t    *testing.T
	dir  string
	mf   manifest
	w    map[string][]float64
	fp16 map[string]bool
}

func newFileModel(t *testing.T, dir string, mf manifest) *fileModel {
	m := &fileModel{t: t, dir: dir, mf: mf, w: map[string][]float64{}, fp16: map[string]bool{}}
	for _, a := range mf.Activations {
		require.Contains(t, []string{"float16", "float32"}, a.Type, a.Name)
		m.fp16[a.Name] = a.Type == "float16"
	}
	for _, wf := range mf.Weights {
		b, err := os.ReadFile(filepath.Join(dir, wf.File))
		require.NoError(t, err)
		require.Len(t, b, 2*wf.Shape[0]*wf.Shape[1], wf.File)
		v := make([]float64, len(b)/2)
		for i := range v {
			v[i] = float64(cublas.Float16FromBits(binary.LittleEndian.Uint16(b[2*i:])))
		}
		m.w[wf.Name] = v
	}
	return m
}

func (m *fileModel) read(name string) []byte {
	b, err := os.ReadFile(filepath.Join(m.dir, name))
	require.NoError(m.t, err)
	return b
}

func (m *fileModel) int32s(name string) []int32 {
	b := m.read(name)
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func (m *fileModel) float32s(name string) []float32 {
	b := m.read(name)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func half(v float64) float64 { return float64(cublas.Float16FromBits(cublas.Float16Bits(float32(v)))) }

// as is v as the manifest says activation name is kept: rounded to FP16,
// or float32.
func (m *fileModel) as(name string, v []float64) []float64 {
	_, ok := m.fp16[name]
	require.True(m.t, ok, "the manifest lists %s", name)
	for i, x := range v {
		if m.fp16[name] {
			v[i] = half(x)
		} else {
			v[i] = float64(float32(x))
		}
	}
	return v
}

// matvec is W x for W rows × len(x), column-major.
func matvec(w []float64, rows int, x []float64) []float64 {
	y := make([]float64, rows)
	for j, xj := range x {
		for i := range rows {
			y[i] += w[i+j*rows] * xj
		}
	}
	return y
}

func (m *fileModel) norm(x []float64, gain, name string) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+m.mf.Model.RMSEps)
	g := m.w[gain]
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * inv * g[i]
	}
	return m.as(name, out)
}

// logits are the logits after the last of tokens.
func (m *fileModel) logits(tokens []int32) []float64 {
	md := m.mf.Model
	d, hd := md.Width, md.HeadDim
	qd, kvd := md.Heads*hd, md.KVHeads*hd
	keys, vals := make([][][]float64, md.Layers), make([][][]float64, md.Layers)
	var x []float64
	for p, tok := range tokens {
		x = make([]float64, d)
		for i := range x {
			x[i] = m.w["embedding"][int(tok)*d+i] + m.w["positions"][p*d+i]
		}
		x = m.as("x", x)
		for l := range md.Layers {
			pre := "layer" + strconv.Itoa(l) + "."
			qkv := m.as("qkv", matvec(m.w[pre+"qkv"], qd+2*kvd, m.norm(x, pre+"attn_norm", "attn_in")))
			k, v := m.as("k", slices.Clone(qkv[qd:qd+kvd])), m.as("v", slices.Clone(qkv[qd+kvd:]))
			keys[l], vals[l] = append(keys[l], k), append(vals[l], v)
			a := make([]float64, qd)
			for h := range md.Heads {
				g := h / (md.Heads / md.KVHeads)
				scores := make([]float64, p+1)
				top := math.Inf(-1)
				for s := range p + 1 {
					for e := range hd {
						scores[s] += qkv[h*hd+e] * md.AttnScale * keys[l][s][g*hd+e]
					}
					top = max(top, scores[s])
				}
				var sum float64
				for s := range scores {
					scores[s] = math.Exp(scores[s] - top)
					sum += scores[s]
				}
				for e := range hd {
					var acc float64
					for s := range scores {
						acc += scores[s] * vals[l][s][g*hd+e]
					}
					a[h*hd+e] = acc / sum
				}
			}
			a = m.as("attn_out", a)
			for i, v := range matvec(m.w[pre+"wo"], d, a) {
				x[i] += v
			}
			x = m.as("x", x)
			f := matvec(m.w[pre+"w1"], md.FFN, m.norm(x, pre+"ffn_norm", "ffn_in"))
			for i := range f {
				f[i] = max(f[i], 0)
			}
			f = m.as("ffn_hidden", f)
			for i, v := range matvec(m.w[pre+"w2"], d, f) {
				x[i] += v
			}
			x = m.as("x", x)
		}
	}
	h := m.norm(x, "final_norm", "final_in")
	out := make([]float64, md.Vocab)
	emb := m.w["embedding"]
	for t := range out {
		for i := range d {
			out[t] += emb[t*d+i] * h[i]
		}
		out[t] *= md.OutputScale
	}
	return m.as("logits", out)
}

func TestHelpPrintsAParagraphThenTheFlags(t *testing.T) {
	require.True(t, strings.HasPrefix(about, "decode: a decoder-only transformer"))
	clitest.Help(t, run, about, "-kvseqs")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-width", "100"}, {"-heads", "3", "-kvheads", "2", "-width", "192"}, {"-ctx", "100"}, {"-requests", "0"},
		{"-system", "1000"}, {"-kvseqs", "0"}, {"-maxbatch", "0"}, {"-maxbatch", "300"}, {"-check-steps", "0"}, {"-sigma", "-1"}, {"extra"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
		assert.Contains(t, errOut.String(), "decode: ", "%v", args)
	}
}
