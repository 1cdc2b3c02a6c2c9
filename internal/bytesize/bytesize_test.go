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
