package bytesize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sized is a size and how a function of this package writes it.
type sized struct {
	n    uint64
	want string
}

// checkSizes asserts that fn, named name, writes each size as want.
func checkSizes(t *testing.T, name string, fn func(uint64) string, cases []sized) {
	t.Helper()
	for _, tc := range cases {
		assert.Equal(t, tc.want, fn(tc.n), "%s(%d)", name, tc.n)
	}
}

func TestFormat(t *testing.T) {
	checkSizes(t, "Format", Format, []sized{
		{0, "0 B"},
		{255, "255 B"},
		{1 << 10, "1.0 KiB"},
		{64 << 20, "64 MiB"},
		{4 << 30, "4.0 GiB"},
		{1<<64 - 1, "16 EiB"},
	})
}

func TestExact(t *testing.T) {
	checkSizes(t, "Exact", Exact, []sized{
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
	})
}
