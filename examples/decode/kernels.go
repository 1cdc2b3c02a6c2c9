package main

import "github.com/cudapool/cudapool/examples/ptxgen"

// kernelsPTX are the decoder's kernels, written by hand for sm_80 and
// later (the driver compiles them for the device at load, sm_90 included).
// Every activation is column-major: a column per token row of the step.
// A step's rows are described by desc, four int32 a row: the token id, the
// row of the page table that holds its sequence's pages, its position, and
// 0. Pages are addressed as kvcache lays them out: page p of the arena at
// pages + p × stride, inside it layer l's keys of token slot t at
// ((2l × pt + t) × kvdim) elements and its values at ((2l+1) × pt + t) ×
// kvdim, kvdim = KV heads × 64, FP16.
//
//	embed(f32 *x, i32 *desc, f16 *emb, f16 *pos, u32 d, u32 n)
//	    x[:, r] = emb[:, token_r] + pos[:, position_r]; a thread an element
//	rmsnorm(f16 *hi, f16 *lo, f32 *x, f16 *gain, i32 *idx, u32 d, f32 eps)
//	    column j = x[:, c] / sqrt(mean(x[:, c]²) + eps) × gain, c = idx[j]
//	    (j where idx is 0), split into hi and lo; a block of 256 threads a
//	    column
//	kv_store(f32 *qkv, i32 *desc, i32 *table, u64 pages, u64 stride,
//	         u32 maxPages, u32 layer, u32 qdim, u32 kvdim, u32 pt, u32 n)
//	    the K and V rows of qkv (after Q's qdim) to row r's page and slot, FP16
//	attention(f16 *hi, f16 *lo, f32 *qkv, i32 *desc, i32 *table, u64 pages,
//	          u64 stride, u32 maxPages, u32 layer, u32 heads, u32 kvheads,
//	          u32 pt, f32 scale)
//	    grid (heads, n), a warp a block: row r's query of head h against the
//	    keys and values of positions 0..position_r of its sequence, read
//	    through the page table, online softmax, split into hi and lo
//	relu(f16 *hi, f16 *lo, f32 *in, u32 n)   max(in, 0), split into hi and lo
//	argmax(i32 *out, f32 *logits, u32 vocab)
//	    a block of 256 threads a column: the first index of the largest
//
// A kernel whose output a GEMM reads writes it split (ops.go's split): hi
// = FP16(v), lo = FP16((v - hi) × 2048), which the GEMMs read as two FP16
// matrices, adding W × lo with alpha 1/2048 to W × hi.
var kernelsPTX = ptxgen.Module(sharedPTX, embedPTX, rmsnormPTX, reluPTX, argmaxPTX, kvStorePTX, attentionPTX)

// sharedPTX declares the shared memory of rmsnorm's and argmax's
// reductions.
const sharedPTX = `.shared .align 4 .b8 rms_red[1024];
.shared .align 4 .b8 amax_val[1024];
.shared .align 4 .b8 amax_idx[1024];
`

// The kernels that read no page.
var (
	embedPTX = ptxgen.Entry("embed", "u64 p_x, u64 p_desc, u64 p_emb, u64 p_pos, u32 p_d, u32 p_n", ptxgen.Index(3)+`
	mul.lo.u32 %r7, %r1, %r2;
	setp.ge.u32 %p1, %r6, %r7;
	@%p1 bra $L_embed_done;
	div.u32 %r8, %r6, %r1;
	rem.u32 %r9, %r6, %r1;
	cvta.to.global.u64 %rd5, %rd2;
	mul.wide.u32 %rd6, %r8, 16;
	add.s64 %rd7, %rd5, %rd6;
	ld.global.u32 %r10, [%rd7];
	ld.global.u32 %r11, [%rd7+8];
	cvta.to.global.u64 %rd8, %rd3;
	mul.wide.u32 %rd9, %r10, %r1;
	cvt.u64.u32 %rd15, %r9;
	add.s64 %rd9, %rd9, %rd15;
	shl.b64 %rd9, %rd9, 1;
	add.s64 %rd10, %rd8, %rd9;
	ld.global.u16 %h1, [%rd10];
	cvta.to.global.u64 %rd11, %rd4;
	mul.wide.u32 %rd12, %r11, %r1;
	add.s64 %rd12, %rd12, %rd15;
	shl.b64 %rd12, %rd12, 1;
	add.s64 %rd13, %rd11, %rd12;
	ld.global.u16 %h2, [%rd13];
	cvt.f32.f16 %f1, %h1;
	cvt.f32.f16 %f2, %h2;
	add.rn.f32 %f3, %f1, %f2;
	cvta.to.global.u64 %rd14, %rd1;
	mul.wide.u32 %rd15, %r6, 4;
	add.s64 %rd14, %rd14, %rd15;
	st.global.f32 [%rd14], %f3;
$L_embed_done:
	ret;`)
	rmsnormPTX = ptxgen.Entry("rmsnorm", "u64 p_hi, u64 p_lo, u64 p_x, u64 p_gain, u64 p_idx, u32 p_d, f32 p_eps", `
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %r2;
	setp.eq.s64 %p1, %rd5, 0;
	@%p1 bra $L_rms_src;
	cvta.to.global.u64 %rd24, %rd5;
	mul.wide.u32 %rd6, %r2, 4;
	add.s64 %rd7, %rd24, %rd6;
	ld.global.u32 %r5, [%rd7];
$L_rms_src:
	cvta.to.global.u64 %rd8, %rd3;
	mul.wide.u32 %rd9, %r5, %r1;
	shl.b64 %rd9, %rd9, 2;
	add.s64 %rd10, %rd8, %rd9;
	mov.f32 %f2, 0f00000000;
	mov.u32 %r6, %r3;
$L_rms_sum:
	setp.ge.u32 %p2, %r6, %r1;
	@%p2 bra $L_rms_sum_done;
	mul.wide.u32 %rd11, %r6, 4;
	add.s64 %rd12, %rd10, %rd11;
	ld.global.f32 %f3, [%rd12];
	fma.rn.f32 %f2, %f3, %f3, %f2;
	add.s32 %r6, %r6, %r4;
	bra $L_rms_sum;
$L_rms_sum_done:
	mov.u64 %rd13, rms_red;
	mul.wide.u32 %rd14, %r3, 4;
	add.s64 %rd15, %rd13, %rd14;
	st.shared.f32 [%rd15], %f2;
	bar.sync 0;
	shr.u32 %r7, %r4, 1;
$L_rms_red:
	setp.eq.u32 %p2, %r7, 0;
	@%p2 bra $L_rms_red_done;
	setp.ge.u32 %p3, %r3, %r7;
	@%p3 bra $L_rms_red_skip;
	mul.wide.u32 %rd16, %r7, 4;
	add.s64 %rd17, %rd15, %rd16;
	ld.shared.f32 %f4, [%rd17];
	ld.shared.f32 %f5, [%rd15];
	add.rn.f32 %f5, %f5, %f4;
	st.shared.f32 [%rd15], %f5;
$L_rms_red_skip:
	bar.sync 0;
	shr.u32 %r7, %r7, 1;
	bra $L_rms_red;
$L_rms_red_done:
	ld.shared.f32 %f6, [rms_red];
	cvt.rn.f32.u32 %f7, %r1;
	div.rn.f32 %f8, %f6, %f7;
	add.rn.f32 %f8, %f8, %f1;
	sqrt.rn.f32 %f8, %f8;
	rcp.rn.f32 %f9, %f8;
	cvta.to.global.u64 %rd18, %rd1;
	mul.wide.u32 %rd19, %r2, %r1;
	shl.b64 %rd19, %rd19, 1;
	add.s64 %rd18, %rd18, %rd19;
	cvta.to.global.u64 %rd25, %rd2;
	add.s64 %rd25, %rd25, %rd19;
	cvta.to.global.u64 %rd20, %rd4;
	mov.u32 %r6, %r3;
$L_rms_out:
	setp.ge.u32 %p2, %r6, %r1;
	@%p2 bra $L_rms_done;
	mul.wide.u32 %rd11, %r6, 4;
	add.s64 %rd12, %rd10, %rd11;
	ld.global.f32 %f3, [%rd12];
	mul.wide.u32 %rd21, %r6, 2;
	add.s64 %rd22, %rd20, %rd21;
	ld.global.u16 %h1, [%rd22];
	cvt.f32.f16 %f10, %h1;
	mul.rn.f32 %f3, %f3, %f9;
	mul.rn.f32 %f3, %f3, %f10;
	cvt.rn.f16.f32 %h2, %f3;
	cvt.f32.f16 %f11, %h2;
	sub.rn.f32 %f11, %f3, %f11;
	mul.rn.f32 %f11, %f11, 0f45000000;
	cvt.rn.f16.f32 %h3, %f11;
	add.s64 %rd23, %rd18, %rd21;
	st.global.u16 [%rd23], %h2;
	add.s64 %rd26, %rd25, %rd21;
	st.global.u16 [%rd26], %h3;
	add.s32 %r6, %r6, %r4;
	bra $L_rms_out;
$L_rms_done:
	ret;`)
	reluPTX = ptxgen.Elementwise("relu", "u64 p_hi, u64 p_lo, u64 p_in, u32 p_n", 2, "%r1", `
	cvta.to.global.u64 %rd8, %rd3;
	mul.wide.u32 %rd4, %r5, 4;
	add.s64 %rd5, %rd8, %rd4;
	ld.global.f32 %f1, [%rd5];
	max.f32 %f2, %f1, 0f00000000;
	cvt.rn.f16.f32 %h1, %f2;
	cvt.f32.f16 %f3, %h1;
	sub.rn.f32 %f3, %f2, %f3;
	mul.rn.f32 %f3, %f3, 0f45000000;
	cvt.rn.f16.f32 %h2, %f3;
	cvta.to.global.u64 %rd6, %rd1;
	mul.wide.u32 %rd7, %r5, 2;
	add.s64 %rd6, %rd6, %rd7;
	st.global.u16 [%rd6], %h1;
	cvta.to.global.u64 %rd9, %rd2;
	add.s64 %rd9, %rd9, %rd7;
	st.global.u16 [%rd9], %h2;`)
	argmaxPTX = ptxgen.Entry("argmax", "u64 p_out, u64 p_logits, u32 p_vocab", `
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %ntid.x;
	cvta.to.global.u64 %rd3, %rd2;
	mul.wide.u32 %rd4, %r2, %r1;
	shl.b64 %rd4, %rd4, 2;
	add.s64 %rd5, %rd3, %rd4;
	mov.f32 %f1, 0fFF800000;
	mov.u32 %r5, -1;
	mov.u32 %r6, %r3;
$L_amax_scan:
	setp.ge.u32 %p1, %r6, %r1;
	@%p1 bra $L_amax_scanned;
	mul.wide.u32 %rd6, %r6, 4;
	add.s64 %rd7, %rd5, %rd6;
	ld.global.f32 %f2, [%rd7];
	setp.gt.f32 %p2, %f2, %f1;
	@%p2 mov.f32 %f1, %f2;
	@%p2 mov.u32 %r5, %r6;
	add.s32 %r6, %r6, %r4;
	bra $L_amax_scan;
$L_amax_scanned:
	mov.u64 %rd8, amax_val;
	mov.u64 %rd9, amax_idx;
	mul.wide.u32 %rd10, %r3, 4;
	add.s64 %rd11, %rd8, %rd10;
	add.s64 %rd12, %rd9, %rd10;
	st.shared.f32 [%rd11], %f1;
	st.shared.u32 [%rd12], %r5;
	bar.sync 0;
	shr.u32 %r7, %r4, 1;
$L_amax_red:
	setp.eq.u32 %p1, %r7, 0;
	@%p1 bra $L_amax_red_done;
	setp.ge.u32 %p2, %r3, %r7;
	@%p2 bra $L_amax_red_skip;
	mul.wide.u32 %rd13, %r7, 4;
	add.s64 %rd14, %rd11, %rd13;
	add.s64 %rd15, %rd12, %rd13;
	ld.shared.f32 %f3, [%rd14];
	ld.shared.u32 %r8, [%rd15];
	ld.shared.f32 %f4, [%rd11];
	ld.shared.u32 %r9, [%rd12];
	setp.gt.f32 %p3, %f3, %f4;
	setp.eq.f32 %p4, %f3, %f4;
	setp.lt.u32 %p5, %r8, %r9;
	and.pred %p4, %p4, %p5;
	or.pred %p3, %p3, %p4;
	@%p3 st.shared.f32 [%rd11], %f3;
	@%p3 st.shared.u32 [%rd12], %r8;
$L_amax_red_skip:
	bar.sync 0;
	shr.u32 %r7, %r7, 1;
	bra $L_amax_red;
$L_amax_red_done:
	setp.ne.u32 %p1, %r3, 0;
	@%p1 bra $L_amax_done;
	ld.shared.u32 %r10, [amax_idx];
	cvta.to.global.u64 %rd16, %rd1;
	mul.wide.u32 %rd17, %r2, 4;
	add.s64 %rd18, %rd16, %rd17;
	st.global.u32 [%rd18], %r10;
$L_amax_done:
	ret;`)
)
