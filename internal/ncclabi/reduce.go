package ncclabi

import (
	"encoding/binary"
	"math"

	"github.com/cudapool/cudapool/internal/blas"
)

// Combine reduces the arrays ins, one per rank in rank order, each of n
// elements of type t in the device's byte order, into out with op, as the
// fake computes a reduction: integers in two's complement at the type's
// width (a sum or product wraps, as on a GPU; an average is the wrapped sum
// divided by the ranks, truncated toward zero, as NCCL's ncclAvg for
// integers), floating point in float64 over the ranks in order, rounded
// once to t, to nearest even. A GPU adds in t's precision in an order its
// algorithm picks: its result differs from this one by at most the bound
// the nccl package documents. out may be one of ins.
func Combine(out []byte, ins [][]byte, n uint64, t DataType, op RedOp) {
	es := t.Size()
	larger := func(a, b uint64) uint64 { return maxInt(a, b, t) }
	smaller := func(a, b uint64) uint64 { return minInt(a, b, t) }
	for i := range n {
		o := i * es
		switch t {
		case Float16, BFloat16, Float32, Float64:
			acc := getFloat(ins[0][o:], t)
			for _, in := range ins[1:] {
				acc = step(op, acc, getFloat(in[o:], t), math.Max, math.Min)
			}
			if op == Avg {
				acc /= float64(len(ins))
			}
			putFloat(out[o:], t, acc)
		default:
			acc := getInt(ins[0][o:], t)
			for _, in := range ins[1:] {
				acc = wrap(step(op, acc, getInt(in[o:], t), larger, smaller), t)
			}
			if op == Avg {
				acc = avgInt(acc, uint64(len(ins)), t)
			}
			putInt(out[o:], t, acc)
		}
	}
}

// step is acc op v, a float's or an integer's: Avg sums (Combine divides
// once all ranks are summed), and Max and Min are larger and smaller.
func step[V uint64 | float64](op RedOp, acc, v V, larger, smaller func(a, b V) V) V {
	switch op {
	case Sum, Avg:
		return acc + v
	case Prod:
		return acc * v
	case Max:
		return larger(acc, v)
	case Min:
		return smaller(acc, v)
	}
	return acc
}

// signed reports whether integer type t is signed.
func signed(t DataType) bool { return t == Int8 || t == Int32 || t == Int64 }

// getInt reads an integer element as its bits, sign-extended for a signed
// type, so that uint64 arithmetic wraps as the type's does once truncated.
func getInt(b []byte, t DataType) uint64 {
	switch t {
	case Int8:
		return uint64(int64(int8(b[0])))
	case Uint8:
		return uint64(b[0])
	case Int32:
		return uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case Uint32:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putInt(b []byte, t DataType, v uint64) {
	switch t.Size() {
	case 1:
		b[0] = byte(v)
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// wrap truncates v to t's width and extends it back, as getInt reads.
func wrap(v uint64, t DataType) uint64 {
	var b [8]byte
	putInt(b[:], t, v)
	return getInt(b[:], t)
}

func maxInt(a, b uint64, t DataType) uint64 {
	if signed(t) {
		return uint64(max(int64(a), int64(b)))
	}
	return max(a, b)
}

func minInt(a, b uint64, t DataType) uint64 {
	if signed(t) {
		return uint64(min(int64(a), int64(b)))
	}
	return min(a, b)
}

// avgInt divides the wrapped sum by n, truncating toward zero.
func avgInt(sum, n uint64, t DataType) uint64 {
	if signed(t) {
		return wrap(uint64(int64(sum)/int64(n)), t)
	}
	return sum / n
}

func getFloat(b []byte, t DataType) float64 {
	switch t {
	case Float16:
		return float64(blas.F16To32(binary.LittleEndian.Uint16(b)))
	case BFloat16:
		return float64(blas.BF16To32(binary.LittleEndian.Uint16(b)))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// putFloat rounds v to t. A half or bfloat16 is rounded from float64
// through float32: the double rounding is exact for every value of t's
// range that float32's 24-bit mantissa holds, and off by one unit in the
// last place of t at most otherwise, within the documented bound.
func putFloat(b []byte, t DataType, v float64) {
	switch t {
	case Float16:
		binary.LittleEndian.PutUint16(b, blas.F16(float32(v)))
	case BFloat16:
		binary.LittleEndian.PutUint16(b, blas.BF16(float32(v)))
	case Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	default:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}
}
