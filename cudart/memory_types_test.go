package cudart

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDevicePtrPrintsAsHex(t *testing.T) {
	p := DevicePtr(0x7f00_1000)
	for format, want := range map[string]string{
		"%v":     "0x7f001000",
		"%s":     "0x7f001000",
		"%x":     "7f001000",
		"%#x":    "0x7f001000",
		"%X":     "7F001000",
		"%#X":    "0X7F001000",
		"%d":     "2130710528",
		"%12v":   "  0x7f001000",
		"%-12x|": "7f001000    |",
		"%012x":  "00007f001000",
	} {
		assert.Equal(t, want, fmt.Sprintf(format, p), format)
	}
	assert.Equal(t, "0x7f001000", p.String())
	assert.Equal(t, "[0x0 0x100]", fmt.Sprint([]DevicePtr{0, 256}), "inside a slice too")
	assert.Equal(t, "0x100", fmt.Sprintf("%v", any(DevicePtr(256))), "through an interface")
}
