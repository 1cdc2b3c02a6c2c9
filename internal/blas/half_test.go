package blas

import (
	"math"
	"testing"
)

func TestHalfConversions(t *testing.T) {
	for _, c := range []struct {
		f    float32
		bits uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00},
		{6.103515625e-05, 0x0400}, {5.960464477539063e-08, 0x0001}, {2.9e-08, 0x0000}, {3e-08, 0x0001},
		{1.0009765625, 0x3c01}, {1.00048828125, 0x3c00}, {1.00146484375, 0x3c02}, // ties to even
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
	} {
		if got := F16(c.f); got != c.bits {
			t.Errorf("F16(%g) = %#04x, want %#04x", c.f, got, c.bits)
		}
	}
	for h := range uint32(1 << 16) {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			if f := F16To32(uint16(h)); f == f {
				t.Fatalf("F16To32(%#04x) = %g, want NaN", h, f)
			}
			continue
		}
		if back := F16(F16To32(uint16(h))); back != uint16(h) {
			t.Fatalf("F16(F16To32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestBFloat16Conversions(t *testing.T) {
	for _, c := range []struct {
		f    float32
		bits uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}, {3.0e38, 0x7f62}} {
		if got := BF16(c.f); got != c.bits {
			t.Errorf("BF16(%g) = %#04x, want %#04x", c.f, got, c.bits)
		}
	}
	for h := range uint32(1 << 16) {
		f := BF16To32(uint16(h))
		if f != f {
			continue
		}
		if back := BF16(f); back != uint16(h) {
			t.Fatalf("BF16(BF16To32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestTF32KeepsTenBits(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{1, 1}, {1 + 1.0/2048, 1}, {1 + 3.0/2048, 1 + 2.0/1024}, {1 + 1.0/1024, 1 + 1.0/1024},
	} {
		if got := TF32(c.in); got != c.want {
			t.Errorf("TF32(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
