package bytesize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{255, "255 B"},
		{1 << 10, "1.0 KiB"},
		{64 << 20, "64 MiB"},
		{4 << 30, "4.0 GiB"},
		{1<<64 - 1, "16 EiB"},
	} {
		assert.Equal(t, tc.want, Format(tc.n), "Format(%d)", tc.n)
	}
}

func TestExact(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1000, "1000 B"},
		{4096, "4.0 KiB"},
		{4097, "4097 B"},
		{5 << 9, "2.5 KiB"},
		{100 << 10, "100 KiB"},
		{64<<10 + 1, "64 KiB + 1 B"},
		{5<<20 + 3<<9, "5.0 MiB + 1.5 KiB"},
		{4<<30 + 1, "4.0 GiB + 1 B"},
		{1<<20 - 1, "1023 KiB + 1023 B"},
		{1<<64 - 1, "15 EiB + 1023 PiB + 1023 TiB + 1023 GiB + 1023 MiB + 1023 KiB + 1023 B"},
	} {
		assert.Equal(t, tc.want, Exact(tc.n), "Exact(%d)", tc.n)
	}
}
