package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCandidates(t *testing.T) {
	defaults := []string{"libx.so", "libx.so.2"}
	cases := []struct {
		name, option, env string
		want              []string
	}{
		{"defaults only", "", "", []string{"libx.so", "libx.so.2"}},
		{"env first", "", "/env/libx.so", []string{"/env/libx.so", "libx.so", "libx.so.2"}},
		{"option before env", "/opt/libx.so", "/env/libx.so", []string{"/opt/libx.so", "/env/libx.so", "libx.so", "libx.so.2"}},
		{"no repeats", "libx.so.2", "libx.so.2", []string{"libx.so.2", "libx.so"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CUDAPOOL_TEST_LIB", c.env)
			assert.Equal(t, c.want, candidates(c.option, "CUDAPOOL_TEST_LIB", defaults))
		})
	}
}

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
