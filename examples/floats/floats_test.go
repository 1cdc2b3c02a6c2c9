package floats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoundTrip(t *testing.T) {
	v := []float32{0, 1, -2.5, float32(math.Inf(1)), math.SmallestNonzeroFloat32}
	b := Bytes(v)
	assert.Equal(t, []byte{0, 0, 0x80, 0x3f}, b[4:8], "1.0 little-endian")
	assert.Equal(t, v, Of(b))
	assert.Equal(t, v[:2], Of(b[:11]), "a trailing part of a float is left out")
	c := make([]byte, 4*len(v)+4)
	Put(c, v)
	assert.Equal(t, b, c[:len(b)])
}
