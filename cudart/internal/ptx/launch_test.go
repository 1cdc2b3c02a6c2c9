package ptx

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// arg is a kernel argument of n bytes.
type arg uint32

func (a arg) Size() uint32   { return uint32(a) }
func (a arg) String() string { return "arg" + strconv.Itoa(int(a)) }

func TestCheckLaunch(t *testing.T) {
	fill := Entry{Name: "fill", Params: []uint32{8, 4, 4}}
	one := [3]uint32{1, 1, 1}
	assert.NoError(t, CheckLaunch(fill, one, [3]uint32{256, 1, 1}, []arg{8, 4, 4}))
	for want, err := range map[string]error{
		"grid (0,1,1) of fill: every dimension must be at least 1":          CheckLaunch(fill, [3]uint32{0, 1, 1}, one, []arg{8, 4, 4}),
		"block (1,1,0) of fill: every dimension must be at least 1":         CheckLaunch(fill, one, [3]uint32{1, 1, 0}, []arg{8, 4, 4}),
		"kernel fill takes 3 arguments (of [8 4 4] bytes), got 2":           CheckLaunch(fill, one, one, []arg{8, 4}),
		"argument 2 of 3 of kernel fill is arg8, 8 B; the parameter is 4 B": CheckLaunch(fill, one, one, []arg{8, 8, 4}),
	} {
		if assert.Error(t, err, want) {
			assert.Contains(t, err.Error(), want)
		}
	}
}
