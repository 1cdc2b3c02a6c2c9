package cudart

import (
	"runtime"
	"sync"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// Here Go values become the word arguments of C functions, through
// internal/dl, and C results become Go values. Every Go object whose address
// C gets is referenced from the call's frame, itself from a pool, until the
// call returns: an address is an integer, which keeps nothing alive.

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
// dl.Call, whose arguments escape, allocates nothing for them.
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
func (l *library) call(c calls.Call, dev int, in ...uintptr) ret {
	return l.callMem(c, dev, [2]Mem{}, in...)
}

// callOn is call for a call on stream s, refused before CUDA where
// StreamDestroy destroyed s.
func (l *library) callOn(s Stream, c calls.Call, dev int, in ...uintptr) ret {
	if !l.unusable() {
		if x := l.registry.staleStream(s); x != nil {
			return ret{code: x.as.Code, failed: c, refused: x}
		}
	}
	return l.call(c, dev, in...)
}

// callMem is call for the functions that take memory by address: the
// table's argMem parameters take m[0] then m[1], host memory as its Go
// pointer and device memory as its address.
func (l *library) callMem(c calls.Call, dev int, m [2]Mem, in ...uintptr) ret {
	f := framePool.Get().(*frame)
	f.reset(m)
	return l.run(c, dev, f, in)
}

// callLaunch is call for cuLaunchKernel: each of args gets a slot of the
// frame, which CUDA reads through the argParams parameter.
func (l *library) callLaunch(c calls.Call, dev int, args []KernelArg, in ...uintptr) ret {
	f := framePool.Get().(*frame)
	f.reset([2]Mem{})
	for _, a := range args {
		f.params = append(f.params, a.bits)
	}
	// The addresses are taken once params has stopped growing.
	for i := range f.params {
		f.ptrs = append(f.ptrs, dl.Addr(&f.params[i]))
	}
	return l.run(c, dev, f, in)
}

// run fills f's arguments for c from in and f.keep, makes the call and
// returns f to the pool. On a nil or closed library it makes no call and
// answers codeClosed, which fail turns into the method's ErrClosed: a method
// whose first act is its call needs no check of its own.
func (l *library) run(c calls.Call, dev int, f *frame, in []uintptr) ret {
	var nIn, nMem, nOut int
	for i, k := range c.Args() {
		switch k {
		case calls.ArgOut:
			f.args[i] = dl.Addr(&f.outs[nOut])
			nOut++
		case calls.ArgMem:
			f.args[i] = f.keep[nMem].addr()
			nMem++
		case calls.ArgParams:
			if len(f.ptrs) > 0 {
				f.args[i] = dl.Addr(&f.ptrs[0])
			}
		case calls.ArgJITOptions:
			f.jitOpts = [2]int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
			f.args[i] = dl.Addr(&f.jitOpts[0])
		case calls.ArgJITValues:
			log := f.keep[nMem]
			nMem++
			f.jitVals = [2]uintptr{log.addr(), uintptr(log.n)}
			f.args[i] = dl.Addr(&f.jitVals[0])
		default:
			if nIn < len(in) {
				f.args[i] = in[nIn]
			}
			nIn++
		}
	}
	r := ret{code: codeClosed, failed: c}
	if !l.unusable() {
		r = l.be.invoke(c, dev, f)
	}
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
		return dl.SliceAddr(m.host)
	}
	return uintptr(m.dev)
}

// structMem is *p as memory to pass by address.
func structMem[T any](p *T) Mem {
	return HostMem(dl.Bytes(p))
}

// sliceMem is the elements of s as memory to pass by address.
func sliceMem[T any](s []T) Mem {
	return HostMem(dl.SliceBytes(s))
}

// cmem views n bytes of C memory at p, which CUDA allocated, as a []byte;
// nil when p is 0.
func cmem(p uint64, n uint64) []byte { return dl.CBytes(uintptr(p), n) }

// dlBackend is the backend of a Library Open returns, the loaded CUDA libraries: the address of every function in the
// table, written by load and read-only after.
type dlBackend struct {
	fns  [calls.Count]uintptr
	libs [2]*dl.Library // by calls.Library; nil where not loaded
}

// invoke makes the call, selecting dev first for the calls
// that depend on the current device. The OS thread stays locked from the
// selection to the end of the call, since the current device is per thread.
func (b *dlBackend) invoke(c calls.Call, dev int, f *frame) ret {
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
	return Code(int32(dl.Call(fn, args...)))
}

// text is CUDA's name and message for code, asked of the library that
// returned it; "" where it has none.
func (b *dlBackend) text(code Code, which calls.Library) (name, msg string) {
	if which == calls.RuntimeLibrary {
		n := dl.Call(b.fns[calls.GetErrorName], uintptr(code))
		m := dl.Call(b.fns[calls.GetErrorString], uintptr(code))
		return dl.GoString(n), dl.GoString(m)
	}
	var o [2]uintptr
	n := dl.Call(b.fns[calls.CuGetErrorName], uintptr(code), dl.Addr(&o[0]))
	m := dl.Call(b.fns[calls.CuGetErrorString], uintptr(code), dl.Addr(&o[1]))
	if int32(n) == 0 {
		name = dl.GoString(o[0])
	}
	if int32(m) == 0 {
		msg = dl.GoString(o[1])
	}
	return name, msg
}
