package pool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// pop takes the last pushed first, and reports an empty stack.
func TestPop(t *testing.T) {
	s := []int{1, 2}
	for _, want := range []int{2, 1} {
		v, ok := pop(&s)
		assert.True(t, ok)
		assert.Equal(t, want, v)
	}
	v, ok := pop(&s)
	assert.False(t, ok)
	assert.Zero(t, v)
	assert.Empty(t, s)
}
