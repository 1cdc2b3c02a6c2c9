package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/blas"
)

// The fake's cuBLAS follows cuBLAS 13.1 on CUDA 13.0, as measured on an
// H100 and an H200 (see the conformance suite's BLAS group).
const (
	blasMajor, blasMinor, blasPatch = 13, 1, 0
	// blasHandleCharge is the device memory a handle takes outside any
	// allocation the program sees, from cublasCreate to cublasDestroy, and
	// blasContextCharge what the device's first live handle takes beside
	// it, until its last is destroyed: 64 MiB and 2 MiB on an H100.
	// blasModuleCharge is what the first cublasCreate on a device loads
	// into its context (cuBLAS's kernels, loaded lazily, CUDA's default)
	// and keeps until the context ends: 2 MiB on 1-, 2- and 4-GPU H100
	// hosts alike, whatever the devices visible.
	blasHandleCharge  = 64 << 20
	blasContextCharge = 2 << 20
	blasModuleCharge  = 2 << 20
)

// blasState is the fake's cuBLAS handles.
type blasState struct {
	handles map[uintptr]*blasHandle
	next    uintptr
}

type blasHandle struct {
	seq    int    // the runtime calls made before it
	origin origin // where it was made, on a fake that checks leaks
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
// reading and writing device memory as a KernelFunc does. Before it reads
// anything it checks every byte each operand spans, in arithmetic that
// cannot wrap: memory outside live allocations (or outside registered
// regions, WithMemcheck) faults the device with cudaErrorIllegalAddress,
// naming the call, its handle and stream, the operand (A, B or C) and the
// buffer that operand starts in, and nothing of the GEMM is computed or
// written. It accumulates in float64 in a fixed order, every product
// included, so that NaN and Inf propagate as on a GPU, and rounds once to
// C's type: the result is deterministic and within the tolerance the cublas
// package documents of CUDA's. With beta 0, C is not read. In MathTF32 mode, FP32 inputs are rounded to TF32 first, as tensor
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
	if x := f.enterBLAS(c); x != nil {
		return blas.Status(x.code), nil
	}
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
		return f.blasGemm(c, fr.Handle, h, g), nil
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
	ds := &f.devs[device]
	var module uint64
	if !ds.blasModule {
		module = blasModuleCharge
	}
	if x := f.charge(device, blasHandleCharge+f.blasFirst(device)+module); x != nil {
		return blas.StatusAllocFailed
	}
	ds.blasModule = true
	if f.blas.handles == nil {
		f.blas.handles = make(map[uintptr]*blasHandle)
	}
	f.blas.next += 0x10
	raw := 0xb_0000 + f.blas.next
	h := &blasHandle{device: device, seq: f.seq}
	if f.origins != nil {
		h.origin = callerOrigin()
	}
	f.blas.handles[raw] = h
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
