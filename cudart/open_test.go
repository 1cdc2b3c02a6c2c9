package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefaultNames(t *testing.T) {
	assert.Equal(t, []string{
		"libcudart.so", "libcudart.so.13", "libcudart.so.12",
		"/usr/local/cuda/lib64/libcudart.so", "/usr/local/cuda/lib64/libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.12",
	}, defaultRuntimeNames, "the search order is documented")
	assert.Equal(t, []string{"libcuda.so.1"}, defaultDriverNames)
}

func TestOpenRefusesANilOption(t *testing.T) {
	l, err := Open(WithLibraryPath("/nonexistent/libcudart.so"), nil)
	assert.Nil(t, l)
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.EqualError(t, err, "cudart: invalid option: option 2 of 2 is nil")
}
