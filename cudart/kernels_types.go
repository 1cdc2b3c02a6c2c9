package cudart

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/internal/enum"
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

var argKinds = enum.Table[argKind]{Names: []string{"ptr", "int32", "uint32", "int64", "uint64", "float32", "float64"}, Unknown: "argKind(%d)"}

// String names the kind as the Go type Arg took, e.g. "float32"; "ptr" for
// a DevicePtr.
func (k argKind) String() string { return argKinds.Name(k) }

// Size is the number of bytes a kernel parameter of kind k occupies: 4 or 8.
func (k argKind) Size() uint32 {
	switch k {
	case argKindInt32, argKindUint32, argKindFloat32:
		return 4
	}
	return 8
}

// KernelArg is one argument of LaunchKernel: a value of a kernel parameter
// type, made by Arg.
type KernelArg struct {
	bits uint64 // the value's bytes as CUDA receives them, little-endian
	kind argKind
}

// Arg is a kernel argument of v's Go type: DevicePtr for a device pointer
// (.u64 in PTX, T* in CUDA C), int32 (.s32, int), uint32 (.u32, unsigned),
// int64 (.s64, long long), uint64 (.u64, unsigned long long), float32
// (.f32, float) or float64 (.f64, double). A constant says its type, as in
// Arg(uint32(256)) or Arg[float32](0.5): an untyped one would be an int,
// which no kernel parameter is.
func Arg[T DevicePtr | int32 | uint32 | int64 | uint64 | float32 | float64](v T) KernelArg {
	switch v := any(v).(type) {
	case int32:
		return KernelArg{bits: uint64(uint32(v)), kind: argKindInt32}
	case uint32:
		return KernelArg{bits: uint64(v), kind: argKindUint32}
	case int64:
		return KernelArg{bits: uint64(v), kind: argKindInt64}
	case uint64:
		return KernelArg{bits: v, kind: argKindUint64}
	case float32:
		return KernelArg{bits: uint64(math.Float32bits(v)), kind: argKindFloat32}
	case float64:
		return KernelArg{bits: math.Float64bits(v), kind: argKindFloat64}
	default:
		return KernelArg{bits: uint64(v.(DevicePtr)), kind: argKindPtr}
	}
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
