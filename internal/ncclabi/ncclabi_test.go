package ncclabi

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

func TestConfigIsNCCL228sLayout(t *testing.T) {
	var c Config
	if got := unsafe.Sizeof(c); got != ConfigBytes {
		t.Fatalf("Config is %d bytes, ncclConfig_v22800 %d", got, ConfigBytes)
	}
	for _, f := range []struct {
		name string
		off  uintptr
		want uintptr
	}{
		{"blocking", unsafe.Offsetof(c.Blocking), 16},
		{"netName", unsafe.Offsetof(c.NetName), 32},
		{"commName", unsafe.Offsetof(c.CommName), 48},
		{"nvlinkCentricSched", unsafe.Offsetof(c.NvlinkCentricSched), 76},
	} {
		if f.off != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.off, f.want)
		}
	}
	if n := NewConfig(0, ConfigUndef); n.Size != ConfigBytes || n.Magic != 0xcafebeef || n.MinCTAs != -1<<31 {
		t.Errorf("NewConfig = %+v", n)
	}
}

func TestCombineIntegersWrapAndTruncate(t *testing.T) {
	for _, c := range []struct {
		t    DataType
		op   RedOp
		in   []int64
		want int64
	}{
		{Int32, Sum, []int64{1<<31 - 1, 1}, -1 << 31},
		{Int32, Avg, []int64{-7, 0}, -3},
		{Int64, Avg, []int64{7, 0}, 3},
		{Int8, Prod, []int64{16, 16}, 0},
		{Int32, Min, []int64{-5, 3}, -5},
		{Int64, Max, []int64{-5, 3}, 3},
	} {
		es := c.t.Size()
		var ins [][]byte
		for _, v := range c.in {
			b := make([]byte, 8)
			binary.LittleEndian.PutUint64(b, uint64(v))
			ins = append(ins, b[:es])
		}
		out := make([]byte, 8)
		Combine(out, ins, 1, c.t, c.op)
		if got := int64(getInt(out, c.t)); got != c.want {
			t.Errorf("%s %s %v = %d, want %d", c.t, c.op, c.in, got, c.want)
		}
	}
}
