package main

import (
	"encoding/binary"
	"math"

	"github.com/cudapool/cudapool/cublas"
)

// Seeds of the operands' values, as cref/gemm.c seeds them.
const (
	seedA = 1
	seedB = 2
)

// values are n values of the generator cref/gemm.c uses: a 32-bit linear
// congruential generator from seed, each value k/256 with k = (x >> 23) -
// 256, in [-1, 1). They are exact in FP32, FP16 and BF16 alike (at most 8
// significant bits), so the Go tool and the C program put the same bits in
// memory whatever their rounding.
func values(n int, seed uint32) []float32 {
	out := make([]float32, n)
	x := seed
	for i := range out {
		x = x*1664525 + 1013904223
		out[i] = float32(int32(x>>23)-256) / 256
	}
	return out
}

// encode lays v out as t's little-endian elements.
func encode(v []float32, t cublas.DataType) []byte {
	b := make([]byte, len(v)*t.Size())
	for i, x := range v {
		switch t {
		case cublas.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], cublas.Float16Bits(x))
		case cublas.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], cublas.BFloat16Bits(x))
		default:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	}
	return b
}

// decode reads element i of t's little-endian elements.
func decode(b []byte, t cublas.DataType, i int) float32 {
	switch t {
	case cublas.Float16:
		return cublas.Float16FromBits(binary.LittleEndian.Uint16(b[2*i:]))
	case cublas.BFloat16:
		return cublas.BFloat16FromBits(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}
