package callerr

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

type codeError struct{ code int }

func (e *codeError) Error() string { return Text("lib", "", "libCode", e.code, "what it means") }

func TestText(t *testing.T) {
	assert.Equal(t, "lib: libFoo(1, 2) on device 0: LIB_BAD (3): bad value", Text("lib", "libFoo(1, 2) on device 0", "LIB_BAD", 3, "bad value"))
	assert.Equal(t, "lib: LIB_BAD (3): bad value", Text("lib", "", "LIB_BAD", 3, "bad value"))
}

func TestMatch(t *testing.T) {
	same := func(want int) func(*codeError) bool { return func(t *codeError) bool { return t.code == want } }
	tests := []struct {
		name   string
		target error
		code   int
		want   bool
	}{
		{"same code", &codeError{2}, 2, true},
		{"wrapped", fmt.Errorf("context: %w", &codeError{2}), 2, true},
		{"other code", &codeError{3}, 2, false},
		{"other type", fmt.Errorf("lib: 2"), 2, false},
		{"nil", nil, 2, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Match(tc.target, same(tc.code)), tc.name)
	}
}
