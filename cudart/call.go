package cudart

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// This file and dl.go are the only ones in the package that use unsafe: here
// Go values become the uintptr arguments of C functions and C results become
// Go values.
//
// A Go pointer given to C as a uintptr must point at memory that neither
// moves nor is freed until the call returns. Go's heap does not move, but a
// goroutine's stack does when it grows, so every Go object whose address C
// gets is on the heap and referenced from the call's frame, itself from a
// pool, until the call returns.

// maxArgs is the most parameters a function in the table has: cuLaunchKernel's.
const maxArgs = 11

// The CUjit_option values of the error log cuModuleLoadDataEx fills.
const (
	jitErrorLogBuffer          = 5 // CU_JIT_ERROR_LOG_BUFFER
	jitErrorLogBufferSizeBytes = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
)

// cargs are the C arguments of one call, in order.
type cargs [maxArgs]uintptr

// frame is one call's arguments and the values CUDA writes through its
// out-parameters. Frames come from a pool and live on the heap, so that
// purego.SyscallN, whose arguments escape, allocates nothing for them.
type frame struct {
	args cargs
	outs [2]uint64
	sel  [1]uintptr // cudaSetDevice's argument
	// keep holds the memory args points into. Storing it in a heap object
	// also makes the compiler allocate that memory on the heap, never on a
	// stack that could move under the call.
	keep [2]Mem
	// params are a kernel's argument values, one 64-bit slot each, and
	// ptrs the array of their addresses that cuLaunchKernel reads. Both keep
	// their capacity across calls, so a launch allocates nothing.
	params []uint64
	ptrs   []uintptr
	// jitOpts and jitVals are cuModuleLoadDataEx's options and their values.
	jitOpts [2]int32
	jitVals [2]uintptr
}

// reset clears f for a new call, keeping the capacity of its kernel slots.
func (f *frame) reset(m [2]Mem) {
	*f = frame{keep: m, params: f.params[:0], ptrs: f.ptrs[:0]}
}

var framePool = sync.Pool{New: func() any { return new(frame) }}

// maxPooledParams is the most kernel argument slots a pooled frame keeps: a
// rare launch with more does not make every frame large.
const maxPooledParams = 64

// call makes c with in, its integer arguments in the order the table lists
// them; the out-parameters are the layer's, read back into ret.a and ret.b.
func (l *lib) call(c calls.Call, dev int, in ...uintptr) ret {
	return l.callMem(c, dev, [2]Mem{}, in...)
}

// callMem is call for the functions that take memory by address: the
// table's argMem parameters take m[0] then m[1], host memory as its Go
// pointer and device memory as its address.
func (l *lib) callMem(c calls.Call, dev int, m [2]Mem, in ...uintptr) ret {
	f := framePool.Get().(*frame)
	f.reset(m)
	return l.run(c, dev, f, in)
}

// callLaunch is call for cuLaunchKernel: each of args gets a slot of the
// frame, which CUDA reads through the argParams parameter.
func (l *lib) callLaunch(c calls.Call, dev int, args []KernelArg, in ...uintptr) ret {
	f := framePool.Get().(*frame)
	f.reset([2]Mem{})
	for _, a := range args {
		f.params = append(f.params, a.bits)
	}
	// The addresses are taken once params has stopped growing.
	for i := range f.params {
		f.ptrs = append(f.ptrs, uintptr(unsafe.Pointer(&f.params[i])))
	}
	return l.run(c, dev, f, in)
}

// run fills f's arguments for c from in and f.keep, makes the call and
// returns f to the pool.
func (l *lib) run(c calls.Call, dev int, f *frame, in []uintptr) ret {
	var nIn, nMem, nOut int
	for i, k := range c.Args() {
		switch k {
		case calls.ArgOut:
			f.args[i] = uintptr(unsafe.Pointer(&f.outs[nOut]))
			nOut++
		case calls.ArgMem:
			f.args[i] = f.keep[nMem].addr()
			nMem++
		case calls.ArgParams:
			if len(f.ptrs) > 0 {
				f.args[i] = uintptr(unsafe.Pointer(&f.ptrs[0]))
			}
		case calls.ArgJITOptions:
			f.jitOpts = [2]int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
			f.args[i] = uintptr(unsafe.Pointer(&f.jitOpts[0]))
		case calls.ArgJITValues:
			log := f.keep[nMem]
			nMem++
			f.jitVals = [2]uintptr{log.addr(), uintptr(log.n)}
			f.args[i] = uintptr(unsafe.Pointer(&f.jitVals[0]))
		default:
			if nIn < len(in) {
				f.args[i] = in[nIn]
			}
			nIn++
		}
	}
	r := l.be.invoke(c, dev, f)
	r.a, r.b = f.outs[0], f.outs[1]
	f.keep = [2]Mem{} // the pool must not keep the caller's memory alive
	if cap(f.params) > maxPooledParams {
		f.params, f.ptrs = nil, nil
	}
	framePool.Put(f)
	return r
}

// addr is what C gets for m: the address of its first byte.
func (m Mem) addr() uintptr {
	if m.isH {
		return uintptr(unsafe.Pointer(unsafe.SliceData(m.host)))
	}
	return uintptr(m.dev)
}

// structMem is *p as memory to pass by address.
func structMem[T any](p *T) Mem {
	return HostMem(unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)))
}

// sliceMem is the elements of s as memory to pass by address.
func sliceMem[T any](s []T) Mem {
	var zero T
	return HostMem(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(zero)))
}

// cmem views n bytes of C memory at p, which CUDA allocated, as a []byte;
// nil when p is 0.
func cmem(p uint64, n uint64) []byte {
	if p == 0 || n == 0 {
		return nil
	}
	// Reinterpreting the integer's storage, rather than converting it,
	// tells vet that the address comes from C, not from a Go pointer.
	u := uintptr(p)
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&u)), n)
}

// library is the loaded CUDA libraries: the address of every function in the
// table, written by load and read-only after.
type library struct {
	fns     [calls.Count]uintptr
	handles [2]uintptr // by Library; 0 where not loaded
}

// invoke makes the call through purego, selecting dev first for the calls
// that depend on the current device. The OS thread stays locked from the
// selection to the end of the call, since the current device is per thread.
func (b *library) invoke(c calls.Call, dev int, f *frame) ret {
	args := f.args[:len(c.Args())]
	if !c.Device() {
		return ret{code: ccall(b.fns[c], args), failed: c}
	}
	f.sel[0] = cint(dev)
	runtime.LockOSThread()
	if code := ccall(b.fns[calls.SetDevice], f.sel[:]); code != 0 {
		runtime.UnlockOSThread()
		return ret{code: code, failed: calls.SetDevice}
	}
	code := ccall(b.fns[c], args)
	runtime.UnlockOSThread()
	return ret{code: code, failed: c}
}

// ccall calls the C function fn with args, which live in a frame, and
// returns its cudaError_t or CUresult, a C int.
func ccall(fn uintptr, args []uintptr) Code {
	r1, _, _ := purego.SyscallN(fn, args...)
	return Code(int32(r1))
}

// text is CUDA's name and message for code, asked of the library that
// returned it; "" where it has none.
func (b *library) text(code Code, which calls.Library) (name, msg string) {
	if which == calls.RuntimeLibrary {
		n, _, _ := purego.SyscallN(b.fns[calls.GetErrorName], uintptr(code))
		m, _, _ := purego.SyscallN(b.fns[calls.GetErrorString], uintptr(code))
		return dl.GoString(n), dl.GoString(m)
	}
	var o [2]uintptr
	n, _, _ := purego.SyscallN(b.fns[calls.CuGetErrorName], uintptr(code), uintptr(unsafe.Pointer(&o[0])))
	m, _, _ := purego.SyscallN(b.fns[calls.CuGetErrorString], uintptr(code), uintptr(unsafe.Pointer(&o[1])))
	if int32(n) == 0 {
		name = dl.GoString(o[0])
	}
	if int32(m) == 0 {
		msg = dl.GoString(o[1])
	}
	return name, msg
}
