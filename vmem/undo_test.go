package vmem

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attempt retries what was deferred before the growth, takes back a failed
// growth's steps newest first, and defers the ones that fail to come back.
func TestAttempt(t *testing.T) {
	var order []string
	step := func(name string, err error) func() error {
		return func() error {
			order = append(order, name)
			return err
		}
	}
	stuck := errors.New("unmap refused")
	d := deferred{step("deferred before", nil)}

	require.NoError(t, d.attempt(func(u *undoLog) error {
		u.push(step("undo kept", nil))
		return nil
	}))
	assert.Equal(t, []string{"deferred before"}, order, "a growth that succeeds keeps its steps")
	assert.Empty(t, d)

	order = nil
	failed := errors.New("map refused")
	err := d.attempt(func(u *undoLog) error {
		u.push(step("undo first", nil))
		u.push(step("undo second", stuck))
		return failed
	})
	assert.ErrorIs(t, err, failed)
	assert.ErrorIs(t, err, stuck)
	assert.ErrorIs(t, err, errRollback)
	assert.Equal(t, []string{"undo second", "undo first"}, order, "newest first, every step tried")
	assert.Len(t, d, 1, "the step that failed is deferred")
}
