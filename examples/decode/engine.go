package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/kvcache"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

const dev = 0

// block is the threads of a block of the element-wise kernels, rmsnorm's
// and argmax's (a power of 2: their reductions halve it).
const block = 256

// engine is the model on the device: its weights, activations, staging
// and both KV arenas (the paged cache and the baseline's contiguous one,
// of the same bytes) in one pool, one stream, a cuBLAS handle on it
// working in a workspace from the pool, and the kernels.
type engine struct {
	rt     cudart.Full
	s      shape
	w      *weights
	st     cudart.Stream
	blas   *cublas.Handle
	p      *pool.Pool
	mod    cudart.Module
	fn     map[string]cudart.Function
	cache  *kvcache.Cache
	tables *kvcache.Tables

	maxRows   int // token rows a step: twice the context (serve admits while fewer than the context's are taken)
	maxSample int // sequences a step: the page tables' rows
	swapPages int

	weights, x, qkv, ff, logits, tokens, desc cudart.DevicePtr
	h, att, g                                 halves           // the GEMMs' inputs: normed, attention's output, FFN's after the ReLU
	contig                                    cudart.DevicePtr // the baseline's KV arena
	contigTable                               cudart.DevicePtr // its [slots][ctx/pageTokens] page table
	contigSlots                               int
	descHost, tokHost, logitsHost             []byte
}

// engineConfig is what sizes the engine.
type engineConfig struct {
	kvPages   int // pages of the paged cache; the baseline has as many bytes
	maxBatch  int // sequences running at once, at most
	swapPages int // host pages of the swap space
}

func newEngine(rt cudart.Full, lib *cublas.Library, w *weights, ec engineConfig) (_ *engine, err error) {
	s := w.s
	e := &engine{rt: rt, s: s, w: w, maxRows: 2 * s.ctx, maxSample: ec.maxBatch, swapPages: ec.swapPages, fn: map[string]cudart.Function{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
		}
	}()
	registerKernels(rt)
	if e.mod, err = rt.ModuleLoadData(dev, kernelsPTX); err != nil {
		return nil, fmt.Errorf("load the kernels: %w", err)
	}
	for _, name := range []string{"embed", "rmsnorm", "kv_store", "attention", "relu", "argmax"} {
		if e.fn[name], err = rt.ModuleGetFunction(dev, e.mod, name); err != nil {
			return nil, err
		}
	}
	if e.st, err = rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	layout := kvcache.Layout{Layers: s.layers, KVHeads: s.kvHeads, HeadDim: headDim, DType: kvcache.FP16, PageTokens: pageTokens}
	pageBytes, err := layout.PageBytes()
	if err != nil {
		return nil, err
	}
	kvBytes := uint64(ec.kvPages) * align256(pageBytes)
	ctxPages := s.ctx / pageTokens
	e.contigSlots = ec.kvPages / ctxPages
	R, S := uint64(e.maxRows), uint64(e.maxSample)
	devBufs := []struct {
		ptr  *cudart.DevicePtr
		size uint64
		name string
	}{
		{&e.weights, 2 * uint64(len(w.bits)), "weights"},
		{&e.x, 4 * uint64(s.width) * R, "residual"},
		{&e.h.hi, 2 * uint64(s.width) * R, "normed (hi)"},
		{&e.h.lo, 2 * uint64(s.width) * R, "normed (lo)"},
		{&e.qkv, 4 * uint64(s.qkvRows()) * R, "qkv"},
		{&e.att.hi, 2 * uint64(s.qDim()) * R, "attention (hi)"},
		{&e.att.lo, 2 * uint64(s.qDim()) * R, "attention (lo)"},
		{&e.ff, 4 * uint64(s.ffn) * R, "ffn"},
		{&e.g.hi, 2 * uint64(s.ffn) * R, "ffn relu (hi)"},
		{&e.g.lo, 2 * uint64(s.ffn) * R, "ffn relu (lo)"},
		{&e.logits, 4 * uint64(s.vocab) * S, "logits"},
		{&e.tokens, 4 * S, "tokens"},
		{&e.desc, 4 * (4*R + S), "rows"},
		{&e.contig, kvBytes, "baseline KV"},
		{&e.contigTable, 4 * uint64(max(1, e.contigSlots*ctxPages)), "baseline page table"},
	}
	hostBufs := []struct {
		mem  *[]byte
		size uint64
		name string
	}{
		{&e.descHost, 4 * (4*R + S), "rows staging"},
		{&e.tokHost, 4 * S, "tokens staging"},
		{&e.logitsHost, 4 * uint64(s.vocab) * S, "logits staging"},
	}
	const slack = 1 << 20 // each buffer's rounding to 256 B, and the page tables
	devTotal := kvBytes + cublas.DefaultWorkspace + 4*uint64(ec.maxBatch*(ctxPages+1)) + slack
	for _, b := range devBufs {
		devTotal += align256(b.size)
	}
	hostTotal := uint64(ec.swapPages)*align256(pageBytes) + 8*uint64(ec.maxBatch*(ctxPages+1)) + slack
	for _, b := range hostBufs {
		hostTotal += align256(b.size)
	}
	if e.p, err = pool.New(rt, pool.WithDeviceBytes(devTotal), pool.WithHostBytes(hostTotal),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(e.st)); err != nil {
		return nil, err
	}
	devRefs := make([]*pool.Buffer, len(devBufs))
	for i, b := range devBufs {
		if devRefs[i], err = e.p.WantDevice(b.size, pool.Name(b.name)); err != nil {
			return nil, err
		}
	}
	ws, err := e.p.WantDevice(cublas.DefaultWorkspace, pool.Name("cuBLAS workspace"))
	if err != nil {
		return nil, err
	}
	hostRefs := make([]*pool.Buffer, len(hostBufs))
	for i, b := range hostBufs {
		if hostRefs[i], err = e.p.WantHost(b.size, pool.Name(b.name)); err != nil {
			return nil, err
		}
	}
	if e.cache, err = kvcache.New(rt, e.p, layout, kvcache.WithPages(ec.kvPages), kvcache.WithSwap(ec.swapPages), kvcache.WithStream(e.st)); err != nil {
		return nil, err
	}
	if e.tables, err = e.cache.NewTables(ec.maxBatch, ctxPages); err != nil {
		return nil, err
	}
	if err := e.p.Commit(); err != nil {
		return nil, err
	}
	for i, b := range devBufs {
		if *b.ptr, err = devRefs[i].Ptr(); err != nil {
			return nil, err
		}
	}
	for i, b := range hostBufs {
		if *b.mem, err = hostRefs[i].Bytes(); err != nil {
			return nil, err
		}
	}
	if e.blas, err = lib.NewHandle(dev, e.st); err != nil {
		return nil, err
	}
	if err := e.blas.SetWorkspace(ws); err != nil {
		return nil, err
	}
	// The GEMMs read columns past a step's rows (gemmCols): zeros until a
	// step writes them, never bytes that may hold NaN.
	for _, b := range devBufs[1:] {
		if err := rt.MemsetAsync(dev, *b.ptr, 0, b.size, e.st); err != nil {
			return nil, err
		}
	}
	if err := e.upload(e.weights, w.bytes()); err != nil {
		return nil, err
	}
	if e.contigSlots > 0 {
		ids := make([]int32, e.contigSlots*ctxPages)
		for i := range ids {
			ids[i] = int32(i)
		}
		if err := e.upload(e.contigTable, int32Bytes(ids)); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// upload copies b to p and waits: setup, through the rows' staging buffer
// a piece at a time, so that every byte the program moves goes through the
// pool's pinned memory.
func (e *engine) upload(p cudart.DevicePtr, b []byte) error {
	for len(b) > 0 {
		n := copy(e.logitsHost, b)
		if err := e.rt.MemcpyAsync(dev, cudart.DeviceMem(p, uint64(n)), cudart.HostMem(e.logitsHost[:n]), cudart.HostToDevice, e.st); err != nil {
			return err
		}
		if err := e.rt.StreamSynchronize(dev, e.st); err != nil {
			return err
		}
		p, b = p.Add(uint64(n)), b[n:]
	}
	return nil
}

func align256(n uint64) uint64 { return (n + 255) &^ 255 }

// close gives back what newEngine made: the handle before the pool that
// holds its workspace, the pool before the stream it waits for.
func (e *engine) close() error {
	var errs []error
	if e.tables != nil {
		errs = append(errs, e.tables.Close())
	}
	if e.blas != nil {
		errs = append(errs, e.blas.Close())
	}
	if e.p != nil {
		errs = append(errs, e.p.Close())
	}
	if e.st != 0 {
		errs = append(errs, e.rt.StreamDestroy(dev, e.st))
	}
	if e.mod != 0 {
		errs = append(errs, e.rt.ModuleUnload(dev, e.mod))
	}
	*e = engine{}
	return errors.Join(errs...)
}

// kvView is where a step's kernels find the pages: a page table of
// maxPages int32 a row, and the arena its ids index.
type kvView struct {
	table    cudart.DevicePtr
	maxPages int
	pages    cudart.DevicePtr
	stride   uint64
}

// stepOut is what a step returns: a token for each sampled row and, for
// the sampled rows asked for, their logits.
type stepOut struct {
	tokens []int32
	logits map[int][]float32 // by index in the sampled rows
}

// step runs the model over rows, one token each at its position in its
// sequence (whose keys and values it writes to the pages first), and
// samples greedily the rows whose indices sample lists; capture lists the
// indices of sample whose logits it copies back. It waits for the device.
func (e *engine) step(rows []rowDesc, sample []int32, capture []int, kv kvView) (stepOut, error) {
	n, ns := len(rows), len(sample)
	if n == 0 || n > e.maxRows || ns == 0 || ns > e.maxSample {
		return stepOut{}, fmt.Errorf("a step of %d rows sampling %d: want 1 to %d rows and 1 to %d sampled", n, ns, e.maxRows, e.maxSample)
	}
	s := e.s
	for i, r := range rows {
		binary.LittleEndian.PutUint32(e.descHost[16*i:], uint32(r.token))
		binary.LittleEndian.PutUint32(e.descHost[16*i+4:], uint32(r.tableRow))
		binary.LittleEndian.PutUint32(e.descHost[16*i+8:], uint32(r.pos))
		binary.LittleEndian.PutUint32(e.descHost[16*i+12:], 0)
	}
	for i, r := range sample {
		binary.LittleEndian.PutUint32(e.descHost[16*n+4*i:], uint32(r))
	}
	descBytes := uint64(16*n + 4*ns)
	if err := e.rt.MemcpyAsync(dev, cudart.DeviceMem(e.desc, descBytes), cudart.HostMem(e.descHost[:descBytes]), cudart.HostToDevice, e.st); err != nil {
		return stepOut{}, err
	}
	un := uint32(n)
	if err := e.launch("embed", grid(un*uint32(s.width)), cudart.Dim1(block),
		cudart.Arg(e.x), cudart.Arg(e.desc), cudart.Arg(e.ptr(e.w.emb)), cudart.Arg(e.ptr(e.w.pos)),
		cudart.Arg(uint32(s.width)), cudart.Arg(un)); err != nil {
		return stepOut{}, err
	}
	for l, lt := range e.w.layers {
		if err := e.layer(l, lt, un, gemmCols(n, e.maxRows), kv); err != nil {
			return stepOut{}, fmt.Errorf("layer %d: %w", l, err)
		}
	}
	if err := e.norm(e.w.finalNorm, uint32(ns), e.desc.Add(16*uint64(n))); err != nil {
		return stepOut{}, err
	}
	if err := e.logitsOf(gemmCols(ns, e.maxSample)); err != nil {
		return stepOut{}, err
	}
	if err := e.launch("argmax", cudart.Dim1(uint32(ns)), cudart.Dim1(block),
		cudart.Arg(e.tokens), cudart.Arg(e.logits), cudart.Arg(uint32(s.vocab))); err != nil {
		return stepOut{}, err
	}
	if err := e.rt.MemcpyAsync(dev, cudart.HostMem(e.tokHost[:4*ns]), cudart.DeviceMem(e.tokens, uint64(4*ns)), cudart.DeviceToHost, e.st); err != nil {
		return stepOut{}, err
	}
	col := uint64(4 * s.vocab)
	for k, i := range capture {
		if err := e.rt.MemcpyAsync(dev, cudart.HostMem(e.logitsHost[uint64(k)*col:uint64(k+1)*col]), cudart.DeviceMem(e.logits.Add(uint64(i)*col), col), cudart.DeviceToHost, e.st); err != nil {
			return stepOut{}, err
		}
	}
	if err := e.rt.StreamSynchronize(dev, e.st); err != nil {
		return stepOut{}, err
	}
	out := stepOut{tokens: make([]int32, ns)}
	for i := range out.tokens {
		t := int32(binary.LittleEndian.Uint32(e.tokHost[4*i:]))
		if t < 0 || int(t) >= s.vocab {
			return stepOut{}, fmt.Errorf("argmax gave token %d for sampled row %d, outside the vocabulary of %d: the logits hold no number (NaN or -Inf)", t, i, s.vocab)
		}
		out.tokens[i] = t
	}
	if len(capture) > 0 {
		out.logits = map[int][]float32{}
		for k, i := range capture {
			out.logits[i] = floats.Of(e.logitsHost[uint64(k)*col : uint64(k+1)*col])
		}
	}
	return out, nil
}

// layer queues one transformer block over n rows, its GEMMs over cols
// columns (gemmCols).
func (e *engine) layer(l int, lt layerTensors, n uint32, cols int, kv kvView) error {
	s := e.s
	if err := e.norm(lt.attnNorm, n, 0); err != nil {
		return err
	}
	if err := e.project(lt.qkv, e.h, e.qkv, cols, 0); err != nil {
		return err
	}
	kvdim := uint32(s.kvDim())
	if err := e.launch("kv_store", grid(2*kvdim*n), cudart.Dim1(block),
		cudart.Arg(e.qkv), cudart.Arg(e.desc), cudart.Arg(kv.table), cudart.Arg(kv.pages), cudart.Arg(kv.stride),
		cudart.Arg(uint32(kv.maxPages)), cudart.Arg(uint32(l)), cudart.Arg(uint32(s.qDim())), cudart.Arg(kvdim),
		cudart.Arg[uint32](pageTokens), cudart.Arg(n)); err != nil {
		return err
	}
	if err := e.launch("attention", cudart.Dim3{X: uint32(s.heads), Y: n, Z: 1}, cudart.Dim1(32),
		cudart.Arg(e.att.hi), cudart.Arg(e.att.lo), cudart.Arg(e.qkv), cudart.Arg(e.desc), cudart.Arg(kv.table), cudart.Arg(kv.pages), cudart.Arg(kv.stride),
		cudart.Arg(uint32(kv.maxPages)), cudart.Arg(uint32(l)), cudart.Arg(uint32(s.heads)), cudart.Arg(uint32(s.kvHeads)),
		cudart.Arg[uint32](pageTokens), cudart.Arg[float32](attnScale)); err != nil {
		return err
	}
	if err := e.project(lt.wo, e.att, e.x, cols, 1); err != nil {
		return err
	}
	if err := e.norm(lt.ffnNorm, n, 0); err != nil {
		return err
	}
	if err := e.project(lt.w1, e.h, e.ff, cols, 0); err != nil {
		return err
	}
	f := uint32(s.ffn) * n
	if err := e.launch("relu", grid(f), cudart.Dim1(block), cudart.Arg(e.g.hi), cudart.Arg(e.g.lo), cudart.Arg(e.ff), cudart.Arg(f)); err != nil {
		return err
	}
	return e.project(lt.w2, e.g, e.x, cols, 1)
}

// attnScale is 1/sqrt(headDim), exact in float32.
const attnScale = 0.125

// lmScale is the output projection's alpha, 1/sqrt(width), which keeps the
// logits' spread near 1.
func lmScale(s shape) float32 { return float32(1 / math.Sqrt(float64(s.width))) }

// norm queues rmsnorm of n columns of the residual into e.h, column j
// from column idx[j] where idx is not 0.
func (e *engine) norm(gain tensor, n uint32, idx cudart.DevicePtr) error {
	return e.launch("rmsnorm", cudart.Dim1(n), cudart.Dim1(block),
		cudart.Arg(e.h.hi), cudart.Arg(e.h.lo), cudart.Arg(e.x), cudart.Arg(e.ptr(gain)), cudart.Arg(idx),
		cudart.Arg(uint32(e.s.width)), cudart.Arg[float32](rmsEps))
}

func (e *engine) launch(name string, g, b cudart.Dim3, args ...cudart.KernelArg) error {
	if err := e.rt.LaunchKernel(dev, e.fn[name], g, b, 0, e.st, args...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ptr is t's address on the device.
func (e *engine) ptr(t tensor) cudart.DevicePtr { return e.weights.Add(2 * uint64(t.off)) }

// grid is the blocks that cover n threads.
func grid(n uint32) cudart.Dim3 { return cudart.Dim1((n + block - 1) / block) }
