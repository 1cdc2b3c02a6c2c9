package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// TestFramesFitEveryCall: a frame has room for the parameters of every call
// of the table.
func TestFramesFitEveryCall(t *testing.T) {
	for _, c := range calls.All() {
		assert.LessOrEqual(t, len(c.Args()), maxArgs, c.String())
	}
}
