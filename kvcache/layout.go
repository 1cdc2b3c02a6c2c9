package kvcache

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/checked"
	"github.com/cudapool/cudapool/internal/enum"
)

// DType is the element type of the cached keys and values.
type DType uint8

// The element types a Layout may hold.
const (
	FP16 DType = iota + 1 // IEEE half precision, 2 bytes
	BF16                  // bfloat16, 2 bytes
	FP32                  // IEEE single precision, 4 bytes
)

// Size is the bytes of one element; 0 for a DType that is none of the above.
func (d DType) Size() uint64 {
	switch d {
	case FP16, BF16:
		return 2
	case FP32:
		return 4
	}
	return 0
}

// String is the type's usual name.
func (d DType) String() string { return dtypes.Name(d) }

var dtypes = enum.Table[DType]{Names: []string{FP16: "FP16", BF16: "BF16", FP32: "FP32"}, Unknown: "DType(%d)"}

// Layout is what one page holds: the keys and values of PageTokens
// consecutive tokens of one sequence, for every layer and KV head.
//
// Inside a page the bytes are ordered layer, then K before V, then token,
// then KV head, then head dimension, so that a kernel finds the key of token
// t (0 <= t < PageTokens) of layer l, head h at
//
//	page + ((2*l+0)*PageTokens + t)*KVHeads*HeadDim*size + h*HeadDim*size
//
// and its value at the same place with 2*l+1 (Layout.Offset computes both).
type Layout struct {
	Layers     int   // transformer layers
	KVHeads    int   // key/value heads per layer (fewer than query heads under grouped-query attention)
	HeadDim    int   // elements per head
	DType      DType // element type of keys and values
	PageTokens int   // tokens per page (vLLM's block size; 16 is common)
}

// TokenBytes is what one token's keys and values take across every layer:
// 2 × Layers × KVHeads × HeadDim × DType.Size(). An error wraps
// ErrInvalidLayout when a field is not positive or the product overflows.
func (l Layout) TokenBytes() (uint64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	n := uint64(2)
	for _, f := range []uint64{uint64(l.Layers), uint64(l.KVHeads), uint64(l.HeadDim), l.DType.Size()} {
		var ok bool
		if n, ok = checked.Mul(n, f); !ok {
			return 0, fmt.Errorf("%w: %v: a token's bytes overflow 64 bits", ErrInvalidLayout, l)
		}
	}
	return n, nil
}

// PageBytes is one page's bytes: TokenBytes × PageTokens, with the errors
// of TokenBytes.
func (l Layout) PageBytes() (uint64, error) {
	t, err := l.TokenBytes()
	if err != nil {
		return 0, err
	}
	n, ok := checked.Mul(t, uint64(l.PageTokens))
	if !ok {
		return 0, fmt.Errorf("%w: %v: a page's bytes overflow 64 bits", ErrInvalidLayout, l)
	}
	return n, nil
}

// Offset is where, inside a page, the keys (v false) or values (v true) of
// token t of layer layer start: KVHeads × HeadDim elements, head after head.
// The arguments must be inside the layout, which PageBytes has accepted.
func (l Layout) Offset(layer, t int, v bool) uint64 {
	kv := uint64(2 * layer)
	if v {
		kv++
	}
	row := uint64(l.KVHeads) * uint64(l.HeadDim) * l.DType.Size()
	return (kv*uint64(l.PageTokens) + uint64(t)) * row
}

func (l Layout) check() error {
	switch {
	case l.Layers <= 0, l.KVHeads <= 0, l.HeadDim <= 0, l.PageTokens <= 0:
		return fmt.Errorf("%w: %v: every count must be positive", ErrInvalidLayout, l)
	case l.DType.Size() == 0:
		return fmt.Errorf("%w: %v: the type must be FP16, BF16 or FP32", ErrInvalidLayout, l)
	}
	return nil
}

// String describes the layout in one line.
func (l Layout) String() string {
	return fmt.Sprintf("%d layers × %d KV heads × %d dims %s, %d tokens a page", l.Layers, l.KVHeads, l.HeadDim, l.DType, l.PageTokens)
}
