package zerocall_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/internal/zerocall"
)

type handle struct{ n int }

func (h *handle) Size() int { return h.n }

func (h *handle) Sum(base int, more ...int) int {
	for _, m := range more {
		base += m
	}
	return base
}

// Every method is handed over by name, and its call gets zero arguments:
// a nil receiver's Size panics, Sum of nothing is 0.
func TestMethods(t *testing.T) {
	var names []string
	zerocall.Methods(reflect.ValueOf((*handle)(nil)), func(name string, call func()) {
		names = append(names, name)
		switch name {
		case "*zerocall_test.handle.Size":
			assert.Panics(t, call, "a nil handle's Size dereferences it")
		case "*zerocall_test.handle.Sum":
			assert.NotPanics(t, call)
		}
	})
	assert.Equal(t, []string{"*zerocall_test.handle.Size", "*zerocall_test.handle.Sum"}, names)
}
