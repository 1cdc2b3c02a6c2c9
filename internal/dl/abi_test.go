package dl

import (
	"encoding/binary"
	"testing"

	"github.com/cudapool/cudapool/internal/check/assert"
)

func TestGoString(t *testing.T) {
	for _, want := range []string{"", "CUBLAS_STATUS_SUCCESS", "a"} {
		b := append([]byte(want), 0, 'x')
		assert.Equal(t, want, GoString(SliceAddr(b)))
	}
	assert.Equal(t, "", GoString(0))
	assert.Equal(t, []byte("ab\x00"), CString("ab"))
}

func TestBytes(t *testing.T) {
	type pair struct {
		a int32
		b int64
	}
	p := &pair{a: 1, b: 2}
	b := Bytes(p)
	assert.Len(t, b, 16, "C pads a before b")
	assert.Equal(t, uintptr(16), Sizeof(*p))
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(b))
	assert.Equal(t, uint64(2), binary.LittleEndian.Uint64(b[8:]))
	assert.Equal(t, Addr(p), SliceAddr(b), "the bytes are the struct's")

	s := []int32{1, 2, 3}
	assert.Len(t, SliceBytes(s), 12)
	assert.Equal(t, SliceAddr(s), SliceAddr(SliceBytes(s)))
	assert.Empty(t, SliceBytes([]int32(nil)))
	assert.Zero(t, SliceAddr([]int32(nil)))

	assert.Equal(t, SliceBytes(s), CBytes(SliceAddr(s), 12), "C memory is viewed in place")
	assert.Nil(t, CBytes(0, 4))
	assert.Nil(t, CBytes(SliceAddr(s), 0))
	assert.Equal(t, uintptr(0xffffffff), Int(-1))
	assert.Equal(t, uintptr(7), Int(7))
}

// TestAddrMovesToTheHeap: a variable whose address is taken lives on the
// heap, where it stays put while C holds the address: a goroutine's stack
// moves when it grows.
func TestAddrMovesToTheHeap(t *testing.T) {
	var sum uintptr
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		var v [4]uint64
		sum += Addr(&v) & 1
	}), "Addr")
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		var v [4]uint64
		sum += SliceAddr(v[:]) & 1
	}), "SliceAddr")
	assert.Zero(t, sum, "aligned")
}
