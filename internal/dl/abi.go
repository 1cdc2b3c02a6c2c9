package dl

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// This file is the only one of the module that uses unsafe: here Go values
// become the word arguments of C functions, and what C returns becomes Go
// values.
//
// A Go pointer given to C as an integer must point at memory that neither
// moves nor is freed until C is done with it. Go's heap does not move, but a
// goroutine's stack does when it grows, so every function here that takes an
// address makes its argument escape to the heap; keeping it alive is the
// caller's part (see the package's Caveats).

// Call calls the C function fn with args, each one machine word: an integer
// argument (a C int as its 32 bits, see Int), or an address from this file.
// It returns the function's integer or pointer result. Give args from a
// slice that lives on the heap (a pooled frame) where the call is on a hot
// path: purego keeps the slice, so a list written at the call allocates.
func Call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// Bind makes *fptr, a Go func variable, call the C function fn, laying out
// its arguments by their Go types as the C ABI does (purego.RegisterFunc):
// what Call's words cannot carry, as a struct larger than 16 bytes passed by
// value (NCCL's ncclUniqueId, 128 bytes), floats, or a struct result. Each
// call reflects and allocates: for calls off the hot path. A struct type
// must match the C struct's layout, padding included.
func Bind(fptr any, fn uintptr) { purego.RegisterFunc(fptr, fn) }

// NewCallback is a C function pointer that calls the Go function fn, whose
// parameters and result are integers or pointers. Callbacks are few for a
// process and never freed: make each once.
func NewCallback(fn any) uintptr { return purego.NewCallback(fn) }

// Int is a C int argument: its 32 bits, as the C ABI reads them.
func Int(v int32) uintptr { return uintptr(uint32(v)) }

// sink makes escape's argument escape: the compiler cannot tell that
// sink.on is always false.
var sink struct {
	on bool
	p  unsafe.Pointer
}

// escape returns p, having made what it points at live on the heap, where
// an address taken of it stays put.
func escape(p unsafe.Pointer) uintptr {
	if sink.on {
		sink.p = p
	}
	return uintptr(p)
}

// Addr is the address of *p, for C to read or write.
func Addr[T any](p *T) uintptr { return escape(unsafe.Pointer(p)) }

// SliceAddr is the address of s's first element; 0 for a nil s.
func SliceAddr[T any](s []T) uintptr { return escape(unsafe.Pointer(unsafe.SliceData(s))) }

// Sizeof is unsafe.Sizeof: the size of v's type in bytes, the structSize a
// C struct of that layout declares.
func Sizeof[T any](v T) uintptr { return unsafe.Sizeof(v) }

// Bytes is the memory of *p as bytes, for a function that takes memory and
// its size, or to check a C layout.
func Bytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// SliceBytes is the memory of s's elements as bytes.
func SliceBytes[T any](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(zero))
}

// CBytes views n bytes of C memory at p, which C allocated and keeps, as a
// []byte; nil when p is 0 or n is 0.
func CBytes(p uintptr, n uint64) []byte {
	if p == 0 || n == 0 {
		return nil
	}
	// Reinterpreting the integer's storage, rather than converting it,
	// tells vet that the address comes from C, not from a Go pointer.
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), n)
}

// GoString copies the NUL-terminated C string at p, which C owns (a
// library's error names and messages are static); "" when p is 0.
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	s := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(s, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(s), n))
}

// CString is s as a NUL-terminated C string, in Go memory the caller keeps
// (SliceAddr is its address).
func CString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
