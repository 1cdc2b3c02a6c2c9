package cudarttest

import (
	"encoding/binary"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/calls"
)

// The fake's cuBLAS follows cuBLAS 13.1 on CUDA 13.0, as measured on an
// H100 and an H200 (see the conformance suite's BLAS group).
const (
	blasMajor, blasMinor, blasPatch = 13, 1, 0
	// blasHandleCharge is the device memory a handle takes outside any
	// allocation the program sees, from cublasCreate to cublasDestroy, and
	// blasContextCharge what the device's first live handle takes beside
	// it, until its last is destroyed: 64 MiB and 2 MiB on an H100.
	blasHandleCharge  = 64 << 20
	blasContextCharge = 2 << 20
)

// blasState is the fake's cuBLAS handles.
type blasState struct {
	handles map[uintptr]*blasHandle
	next    uintptr
}

type blasHandle struct {
	seq    int // the runtime calls made before it
	device int
	stream cudart.Stream
	ws     cudart.DevicePtr // 0 while cuBLAS uses its own
	wsSize uint64
	mode   int32
}

// CUBLAS is the fake's cuBLAS, computed on the CPU, which cublas.Open uses
// for a Fake: call cublas.Open(fake) rather than this.
//
// A GEMM is checked as cuBLAS checks it when it is called, then runs as a
// kernel on the handle's stream: at the stream's next synchronisation point,
// reading and writing device memory as a KernelFunc does, so that memory it
// reads or writes outside live allocations (or outside registered regions,
// WithMemcheck) faults the device, naming the nearest buffer. It accumulates
// in float64 in a fixed order and rounds once to C's type: the result is
// deterministic and within the tolerance the cublas package documents of
// CUDA's. In MathTF32 mode, FP32 inputs are rounded to TF32 first, as tensor
// cores round them. Captured with no workspace set, a GEMM records a
// memory-allocation node, its kernel and a memory-free node, as cuBLAS does.
func (f *Fake) CUBLAS() blas.Backend { return fakeBLAS{f} }

type fakeBLAS struct{ f *Fake }

// Text is cuBLAS's name and message for st.
func (fakeBLAS) Text(st blas.Status) (string, string) { return blas.KnownText(st) }

// Invoke runs c as cuBLAS would.
func (b fakeBLAS) Invoke(device int, c blas.Call, fr *blas.Frame) (blas.Status, error) {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !c.Device() {
		return f.blasNoDevice(c, fr), nil
	}
	if x := f.device(device); x != nil {
		return 0, x.err(calls.SetDevice, "(%d)", device)
	}
	if x := f.broken(device); x != nil {
		return 0, x.err(calls.SetDevice, "(%d)", device)
	}
	if c == blas.Create {
		return f.blasCreate(device, fr), nil
	}
	h := f.blas.handles[fr.Handle]
	if h == nil {
		return blas.StatusNotInitialized, nil
	}
	switch c {
	case blas.Destroy:
		return f.blasDestroy(fr.Handle, h), nil
	case blas.SetStream:
		if _, x := f.blasStream(h.device, cudart.Stream(fr.Stream)); x != nil {
			return blas.StatusInvalidValue, nil
		}
		// cublasSetStream drops the workspace set before it.
		h.stream, h.ws, h.wsSize = cudart.Stream(fr.Stream), 0, 0
	case blas.SetWorkspace:
		if fr.Ptr%256 != 0 {
			return blas.StatusInvalidValue, nil
		}
		h.ws, h.wsSize = cudart.DevicePtr(fr.Ptr), fr.Bytes
	case blas.SetMathMode:
		switch fr.Int &^ 16 { // CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
		case 0, 1, 2, 3:
			h.mode = fr.Int
		default:
			return blas.StatusInvalidValue, nil
		}
	case blas.GemmEx, blas.GemmStridedBatchedEx:
		g := fr.G
		if c == blas.GemmEx {
			g.Batch = 1
		}
		return f.blasGemm(h, g), nil
	}
	return blas.StatusSuccess, nil
}

func (f *Fake) blasNoDevice(c blas.Call, fr *blas.Frame) blas.Status {
	if c != blas.GetProperty {
		return blas.StatusNotSupported
	}
	switch fr.Int {
	case blas.PropMajor:
		fr.Out = blasMajor
	case blas.PropMinor:
		fr.Out = blasMinor
	case blas.PropPatch:
		fr.Out = blasPatch
	default:
		return blas.StatusInvalidValue
	}
	return blas.StatusSuccess
}

func (f *Fake) blasCreate(device int, fr *blas.Frame) blas.Status {
	if x := f.charge(device, blasHandleCharge+f.blasFirst(device)); x != nil {
		return blas.StatusAllocFailed
	}
	if f.blas.handles == nil {
		f.blas.handles = make(map[uintptr]*blasHandle)
	}
	f.blas.next += 0x10
	raw := 0xb_0000 + f.blas.next
	f.blas.handles[raw] = &blasHandle{device: device, seq: f.seq}
	fr.Out = uint64(raw)
	return blas.StatusSuccess
}

// blasDestroy is cublasDestroy, which synchronises the device first, as
// cuBLAS documents.
func (f *Fake) blasDestroy(raw uintptr, h *blasHandle) blas.Status {
	if x := f.syncDevice(h.device); x != nil {
		return blas.StatusInternalError
	}
	delete(f.blas.handles, raw)
	f.devs[h.device].used -= blasHandleCharge + f.blasFirst(h.device)
	return blas.StatusSuccess
}

// blasFirst is blasContextCharge when device has no live handle, else 0.
func (f *Fake) blasFirst(device int) uint64 {
	for _, h := range f.blas.handles {
		if h.device == device {
			return 0
		}
	}
	return blasContextCharge
}

// dropBLAS forgets device's handles, which a reset destroyed with their
// memory.
func (f *Fake) dropBLAS(device int) {
	for raw, h := range f.blas.handles {
		if h.device == device {
			delete(f.blas.handles, raw)
		}
	}
}

// blasStream checks s as a stream cuBLAS can queue on, without logging a
// call of the runtime's: cuBLAS's own calls are not in the runtime's log.
func (f *Fake) blasStream(device int, s cudart.Stream) (int, *failure) {
	if s == 0 || s == streamLegacyHandle || s == streamPerThreadHandle {
		return device, nil
	}
	info, ok := f.streams[s]
	if !ok {
		return 0, fail(400, "stream 0x%x is not live", uintptr(s))
	}
	return info.device, f.broken(info.device)
}

// gemmTypes are the type pairs cublasGemmEx takes with CUBLAS_COMPUTE_32F:
// A and B alike, C alike or FP32.
func gemmTypes(g blas.Gemm) bool {
	if g.AType != g.BType || g.Compute != blas.Compute32F {
		return false
	}
	switch g.AType {
	case blas.R32F:
		return g.CType == blas.R32F
	case blas.R16F, blas.R16BF:
		return g.CType == g.AType || g.CType == blas.R32F
	}
	return false
}

// blasGemm checks g as cublasGemmEx does, then queues it on h's stream.
func (f *Fake) blasGemm(h *blasHandle, g blas.Gemm) blas.Status {
	rowsA, rowsB := g.M, g.K
	if g.TransA != blas.OpN {
		rowsA = g.K
	}
	if g.TransB != blas.OpN {
		rowsB = g.N
	}
	switch {
	case g.TransA < 0 || g.TransA > 2 || g.TransB < 0 || g.TransB > 2:
		return blas.StatusInvalidValue
	case g.M < 0 || g.N < 0 || g.K < 0:
		return blas.StatusInvalidValue
	case g.LDA < max(1, rowsA) || g.LDB < max(1, rowsB) || g.LDC < max(1, g.M):
		return blas.StatusInvalidValue
	case !gemmTypes(g):
		return blas.StatusNotSupported
	case g.Batch < 0:
		// cuBLAS 13.1 checks the batch count only when it launches.
		return blas.StatusExecutionFailed
	}
	if g.M == 0 || g.N == 0 || g.Batch == 0 {
		return blas.StatusSuccess
	}
	qdev, x := f.blasStream(h.device, h.stream)
	if x == nil && qdev != h.device {
		x = fail(400, "the handle's stream is of device %d, the handle of device %d", qdev, h.device)
	}
	if x != nil {
		return blas.StatusExecutionFailed
	}
	s, tf32 := h.stream, h.mode&^16 == 3
	k := &KernelContext{f: f, device: h.device, name: "cublasGemmEx"}
	run := func() *failure {
		*k = KernelContext{f: f, device: h.device, name: k.name}
		for i := range int64(g.Batch) {
			gemmOne(k, g, i, tf32)
		}
		return k.fault
	}
	// Captured with no workspace, cuBLAS takes one from the stream's
	// memory pool around its kernel: the graph gets an allocation and a
	// free node.
	captured := h.ws == 0 && f.recordMemNode(s, cudart.GraphNodeMemAlloc)
	if x := f.enqueue(qdev, s, calls.CuLaunchKernel, run); x != nil {
		return blas.StatusExecutionFailed
	}
	if captured {
		f.recordMemNode(s, cudart.GraphNodeMemFree)
	}
	return blas.StatusSuccess
}

// gemmOne computes the GEMM of batch i through k: C = alpha op(A) op(B) +
// beta C, in float64, rounded once to C's type.
func gemmOne(k *KernelContext, g blas.Gemm, i int64, tf32 bool) {
	m, n, kk := int(g.M), int(g.N), int(g.K)
	a := readOp(k, g.A+uintptr(i*g.StrideA*elemSize(g.AType)), g.AType, int(g.LDA), g.TransA != blas.OpN, m, kk, tf32)
	b := readOp(k, g.B+uintptr(i*g.StrideB*elemSize(g.BType)), g.BType, int(g.LDB), g.TransB != blas.OpN, kk, n, tf32)
	cp := g.C + uintptr(i*g.StrideC*elemSize(g.CType))
	es := int(elemSize(g.CType))
	col := make([]byte, m*es)
	acc := make([]float64, m)
	for j := range n {
		clear(acc)
		for l := range kk {
			bl := float64(b[l+j*kk])
			if bl == 0 {
				continue
			}
			ac := a[l*m : (l+1)*m]
			for r, av := range ac {
				acc[r] += float64(av) * bl
			}
		}
		p := cudart.DevicePtr(cp + uintptr(j*int(g.LDC)*es))
		if g.Beta != 0 && !k.Read(p, col) {
			return
		}
		for r := range m {
			v := float64(g.Alpha) * acc[r]
			if g.Beta != 0 {
				v += float64(g.Beta) * float64(decode(col[r*es:], g.CType))
			}
			encode(col[r*es:], g.CType, float32(v))
		}
		if !k.Write(p, col) {
			return
		}
	}
}

// readOp reads op(X), rows×cols, column-major and dense, from the matrix at
// p with leading dimension ld, transposed when trans.
func readOp(k *KernelContext, p uintptr, t int32, ld int, trans bool, rows, cols int, tf32 bool) []float32 {
	out := make([]float32, rows*cols)
	es := int(elemSize(t))
	// X is stored rows×cols, or cols×rows when transposed: read its columns.
	sr, sc := rows, cols
	if trans {
		sr, sc = cols, rows
	}
	buf := make([]byte, sr*es)
	for c := range sc {
		if !k.Read(cudart.DevicePtr(p+uintptr(c*ld*es)), buf) {
			return out
		}
		for r := range sr {
			v := decode(buf[r*es:], t)
			if tf32 && t == blas.R32F {
				v = blas.TF32(v)
			}
			if trans {
				out[c+r*rows] = v
			} else {
				out[r+c*rows] = v
			}
		}
	}
	return out
}

func elemSize(t int32) int64 {
	if t == blas.R32F {
		return 4
	}
	return 2
}

func decode(b []byte, t int32) float32 {
	switch t {
	case blas.R16F:
		return blas.F16To32(binary.LittleEndian.Uint16(b))
	case blas.R16BF:
		return blas.BF16To32(binary.LittleEndian.Uint16(b))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}

func encode(b []byte, t int32, v float32) {
	switch t {
	case blas.R16F:
		binary.LittleEndian.PutUint16(b, blas.F16(v))
	case blas.R16BF:
		binary.LittleEndian.PutUint16(b, blas.BF16(v))
	default:
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	}
}
