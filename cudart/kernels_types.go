package cudart

import (
	"fmt"
	"math"
)

// Module is a CUmodule: PTX loaded into a device's primary context by
// ModuleLoadData.
type Module uintptr

// Function is a CUfunction: a kernel entry point of a Module, from
// ModuleGetFunction.
type Function uintptr

// Dim3 is a grid or block shape, dim3 in CUDA C. Every dimension of a launch
// must be at least 1.
type Dim3 struct{ X, Y, Z uint32 }

// Dim1 is the one-dimensional shape {x, 1, 1}.
func Dim1(x uint32) Dim3 { return Dim3{X: x, Y: 1, Z: 1} }

// String formats d as CUDA tools print a dim3, e.g. "(4,1,1)".
func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// xyz is d as a launch check takes it.
func (d Dim3) xyz() [3]uint32 { return [3]uint32{d.X, d.Y, d.Z} }

// argKind is the Go type a KernelArg was made from.
type argKind uint8

// The kinds of kernel argument.
const (
	argKindPtr argKind = iota
	argKindInt32
	argKindUint32
	argKindInt64
	argKindUint64
	argKindFloat32
	argKindFloat64
)

var argKindNames = [...]string{"ptr", "int32", "uint32", "int64", "uint64", "float32", "float64"}

// String names the kind as its constructor does, e.g. "float32".
func (k argKind) String() string {
	if int(k) < len(argKindNames) {
		return argKindNames[k]
	}
	return fmt.Sprintf("argKind(%d)", uint8(k))
}

// Size is the number of bytes a kernel parameter of kind k occupies: 4 or 8.
func (k argKind) Size() uint32 {
	switch k {
	case argKindInt32, argKindUint32, argKindFloat32:
		return 4
	}
	return 8
}

// KernelArg is one argument of LaunchKernel: a value of a kernel parameter
// type, made by ArgPtr, ArgInt32, ArgUint32, ArgInt64, ArgUint64,
// ArgFloat32 or ArgFloat64.
type KernelArg struct {
	bits uint64 // the value's bytes as CUDA receives them, little-endian
	kind argKind
}

// ArgPtr is a device pointer argument (.u64 in PTX, T* in CUDA C).
func ArgPtr(p DevicePtr) KernelArg { return KernelArg{bits: uint64(p), kind: argKindPtr} }

// ArgInt32 is a 32-bit signed argument (.s32, int).
func ArgInt32(v int32) KernelArg { return KernelArg{bits: uint64(uint32(v)), kind: argKindInt32} }

// ArgUint32 is a 32-bit unsigned argument (.u32, unsigned).
func ArgUint32(v uint32) KernelArg { return KernelArg{bits: uint64(v), kind: argKindUint32} }

// ArgInt64 is a 64-bit signed argument (.s64, long long).
func ArgInt64(v int64) KernelArg { return KernelArg{bits: uint64(v), kind: argKindInt64} }

// ArgUint64 is a 64-bit unsigned argument (.u64, unsigned long long).
func ArgUint64(v uint64) KernelArg { return KernelArg{bits: v, kind: argKindUint64} }

// ArgFloat32 is a single-precision argument (.f32, float).
func ArgFloat32(v float32) KernelArg {
	return KernelArg{bits: uint64(math.Float32bits(v)), kind: argKindFloat32}
}

// ArgFloat64 is a double-precision argument (.f64, double).
func ArgFloat64(v float64) KernelArg {
	return KernelArg{bits: math.Float64bits(v), kind: argKindFloat64}
}

// Size is the number of bytes CUDA copies for a: 4 or 8.
func (a KernelArg) Size() uint32 { return a.kind.Size() }

// Bits is a's value as the kernel receives it, its Size bytes little-endian
// in the low end of the integer: a float's IEEE 754 bits, a pointer's
// address.
func (a KernelArg) Bits() uint64 { return a.bits }

// String formats a as its kind and value, e.g. "float32(1.5)".
func (a KernelArg) String() string {
	switch a.kind {
	case argKindPtr:
		return "ptr(" + DevicePtr(a.bits).String() + ")"
	case argKindInt32:
		return fmt.Sprintf("int32(%d)", int32(uint32(a.bits)))
	case argKindInt64:
		return fmt.Sprintf("int64(%d)", int64(a.bits))
	case argKindFloat32:
		return fmt.Sprintf("float32(%g)", math.Float32frombits(uint32(a.bits)))
	case argKindFloat64:
		return fmt.Sprintf("float64(%g)", math.Float64frombits(a.bits))
	}
	return fmt.Sprintf("%s(%d)", a.kind, a.bits)
}
