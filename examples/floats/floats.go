package floats

import (
	"encoding/binary"
	"math"
)

// Put writes v into b, little-endian, as the GPU reads it; b holds at
// least 4*len(v) bytes.
func Put(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

// Bytes is v as little-endian bytes.
func Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	Put(b, v)
	return b
}

// Of is b, little-endian float32s, as floats; a trailing part of a float
// is left out.
func Of(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
