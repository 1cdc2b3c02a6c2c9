// Package fakeblas is cuBLAS computed on the CPU for the fake runtime of
// cudarttest: what cublas.Open returns for a fake. It reaches the fake only
// through cudarttest's Library hook, as every library's fake does.
//
// A new cuBLAS call is a row of internal/blas's table, the cublas method
// that fills its frame, and its case in Invoke here.
package fakeblas

import (
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/blas"
)

// The fake's cuBLAS follows cuBLAS 13.1 on CUDA 13.0, as measured on an
// H100 and an H200 (see cuBLAS's groups of the conformance suite).
const (
	major, minor, patch = 13, 1, 0
	// handleCharge is the device memory a handle takes outside any
	// allocation the program sees, from cublasCreate to cublasDestroy, and
	// contextCharge what the device's first live handle takes beside it,
	// until its last is destroyed: 64 MiB and 2 MiB on an H100.
	// moduleCharge is what the first cublasCreate on a device loads into
	// its context (cuBLAS's kernels, loaded lazily, CUDA's default) and
	// keeps until the context ends: 2 MiB on 1-, 2- and 4-GPU H100 hosts
	// alike, whatever the devices visible.
	handleCharge  = 64 << 20
	contextCharge = 2 << 20
	moduleCharge  = 2 << 20
)

// Backend is the fake's cuBLAS on one fake runtime.
//
// A GEMM is checked as cuBLAS checks it when it is called, then runs as a
// kernel on the handle's stream: at the stream's next synchronisation point,
// reading and writing device memory as a kernel does. Before it reads
// anything it checks every byte each operand spans, in arithmetic that
// cannot wrap: memory outside live allocations (or outside registered
// regions, WithMemcheck) faults the device with cudaErrorIllegalAddress,
// naming the call, its handle and stream, the operand (A, B or C) and the
// buffer that operand starts in, and nothing of the GEMM is computed or
// written. It accumulates in float64 in a fixed order, every product
// included, so that NaN and Inf propagate as on a GPU, and rounds once to
// C's type: the result is deterministic and within the tolerance the cublas
// package documents of CUDA's. With beta 0, C is not read. In MathTF32
// mode, FP32 inputs are rounded to TF32 first, as tensor cores round them.
// Captured with no workspace set, a GEMM records a memory-allocation node,
// its kernel and a memory-free node, as cuBLAS does.
type Backend struct {
	lib *cudarttest.Library

	// mu guards the fields below and serialises the calls, as cuBLAS's
	// checks and the fake's charges of one call must not interleave with
	// another's. It is taken before the fake's lock, never under it.
	mu      sync.Mutex
	handles map[uintptr]*handle
	// module and context are, per device, the charges of cuBLAS's kernels
	// and of its first live handle, while live.
	module, context map[int]uintptr
}

type handle struct {
	device int
	stream cudart.Stream
	ws     cudart.DevicePtr // 0 while cuBLAS uses its own
	wsSize uint64
	mode   int32
}

// Open returns the fake's cuBLAS on f: one per fake, however many times it
// is opened, so that the handles of every cublas.Library on f are charged
// and reported together.
func Open(f *cudarttest.Fake) *Backend {
	var names []string
	for c := range blas.Count {
		// The text of a status is read from the table (Text), not asked.
		if c != blas.GetStatusName && c != blas.GetStatusString {
			names = append(names, c.String())
		}
	}
	return cudarttest.Attach(f, "cuBLAS", names, func(l *cudarttest.Library) *Backend {
		return &Backend{lib: l, handles: make(map[uintptr]*handle), module: make(map[int]uintptr), context: make(map[int]uintptr)}
	})
}

// Text is cuBLAS's name and message for st.
func (*Backend) Text(st blas.Status) (string, string) { return blas.KnownText(st) }

// Invoke runs c as cuBLAS would.
func (b *Backend) Invoke(device int, c blas.Call, fr *blas.Frame) (blas.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if code, ok := b.lib.Injected(c.String()); ok {
		return blas.Status(code), nil
	}
	if !c.Device() {
		return noDevice(c, fr), nil
	}
	if err := b.lib.SetDevice(device); err != nil {
		return 0, err
	}
	if c == blas.Create {
		return b.create(device, fr), nil
	}
	h := b.live(fr.Handle)
	if h == nil {
		return blas.StatusNotInitialized, nil
	}
	switch c {
	case blas.Destroy:
		return b.destroy(fr.Handle, h), nil
	case blas.SetStream:
		if _, err := b.lib.StreamDevice(h.device, cudart.Stream(fr.Stream)); err != nil {
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
		return b.gemm(c, fr.Handle, h, g), nil
	}
	return blas.StatusSuccess, nil
}

// live is the handle raw while it lives: a reset of its device destroyed
// it with the device's memory.
func (b *Backend) live(raw uintptr) *handle {
	h := b.handles[raw]
	if h != nil && !b.lib.Live(raw) {
		delete(b.handles, raw)
		return nil
	}
	return h
}

func noDevice(c blas.Call, fr *blas.Frame) blas.Status {
	if c != blas.GetProperty {
		return blas.StatusNotSupported
	}
	switch fr.Int {
	case blas.PropMajor:
		fr.Out = major
	case blas.PropMinor:
		fr.Out = minor
	case blas.PropPatch:
		fr.Out = patch
	default:
		return blas.StatusInvalidValue
	}
	return blas.StatusSuccess
}

// create is cublasCreate: the handle's charge, the context's while the
// device had no live handle, and the kernels' the first time the device's
// context has a handle; all of them or none.
func (b *Backend) create(device int, fr *blas.Frame) blas.Status {
	raw, err := b.lib.Make(cudarttest.Resource{Device: device, Bytes: handleCharge, Call: "cublasCreate", What: "cuBLAS handle"})
	if err != nil {
		return blas.StatusAllocFailed
	}
	var made []uintptr
	for _, up := range []struct {
		ids   map[int]uintptr
		bytes uint64
	}{{b.context, contextCharge}, {b.module, moduleCharge}} {
		if b.lib.Live(up.ids[device]) {
			continue
		}
		id, err := b.lib.Make(cudarttest.Resource{Device: device, Bytes: up.bytes, Call: "cublasCreate"})
		if err != nil {
			for _, m := range append(made, raw) {
				b.lib.Free(m)
			}
			return blas.StatusAllocFailed
		}
		up.ids[device] = id
		made = append(made, id)
	}
	b.handles[raw] = &handle{device: device}
	fr.Out = uint64(raw)
	return blas.StatusSuccess
}

// destroy is cublasDestroy, which synchronises the device first, as cuBLAS
// documents; the device's last handle gives the context's charge back.
func (b *Backend) destroy(raw uintptr, h *handle) blas.Status {
	if err := b.lib.Synchronize(h.device); err != nil {
		return blas.StatusInternalError
	}
	delete(b.handles, raw)
	b.lib.Free(raw)
	for other := range b.handles {
		if b.handles[other].device == h.device && b.live(other) != nil {
			return blas.StatusSuccess
		}
	}
	b.lib.Free(b.context[h.device])
	delete(b.context, h.device)
	return blas.StatusSuccess
}
