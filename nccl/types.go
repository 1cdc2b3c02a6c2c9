package nccl

import "github.com/cudapool/cudapool/internal/ncclabi"

// DataType is an element type of a collective (ncclDataType_t).
type DataType int32

// The element types. Float16 and BFloat16 elements are the 16-bit patterns
// of IEEE half precision and bfloat16; integers and floats are in the
// device's byte order.
const (
	Int8     = DataType(ncclabi.Int8)
	Uint8    = DataType(ncclabi.Uint8)
	Int32    = DataType(ncclabi.Int32)
	Uint32   = DataType(ncclabi.Uint32)
	Int64    = DataType(ncclabi.Int64)
	Uint64   = DataType(ncclabi.Uint64)
	Float16  = DataType(ncclabi.Float16)
	Float32  = DataType(ncclabi.Float32)
	Float64  = DataType(ncclabi.Float64)
	BFloat16 = DataType(ncclabi.BFloat16)
)

// Size is an element's size in bytes; 0 for a value that is no DataType.
func (t DataType) Size() uint64 { return ncclabi.DataType(t).Size() }

// String is NCCL's name, e.g. "ncclFloat32".
func (t DataType) String() string { return ncclabi.DataType(t).String() }

// RedOp is a reduction operation (ncclRedOp_t).
type RedOp int32

// The reduction operations. Avg divides the sum by the number of ranks: a
// float's sum is scaled, an integer's is divided, truncating toward zero.
const (
	Sum  = RedOp(ncclabi.Sum)
	Prod = RedOp(ncclabi.Prod)
	Max  = RedOp(ncclabi.Max)
	Min  = RedOp(ncclabi.Min)
	Avg  = RedOp(ncclabi.Avg)
)

// String is NCCL's name, e.g. "ncclSum".
func (o RedOp) String() string { return ncclabi.RedOp(o).String() }
