//go:build !cgo

package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOpenWithoutCgo(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithLibraryPath("libm.so.6"), WithDriverLibraryPath("libm.so.6")}} {
		l, err := Open(opts...)
		assert.ErrorIs(t, err, ErrNoCgo)
		assert.Nil(t, l)
	}
}
