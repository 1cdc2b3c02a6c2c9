package opt

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errInvalid = errors.New("pkg: invalid option")

type option interface{ apply(*[]int) error }

type add int

func (a add) apply(s *[]int) error {
	if a < 0 {
		return errors.New("negative")
	}
	*s = append(*s, int(a))
	return nil
}

func run(opts ...option) ([]int, error) {
	var got []int
	err := Apply(opts, errInvalid, func(o option) error { return o.apply(&got) })
	return got, err
}

func TestApplyRunsInOrder(t *testing.T) {
	got, err := run(add(1), add(2), add(3))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, got)
}

func TestApplyRefusesANilOptionByPosition(t *testing.T) {
	got, err := run(add(1), nil, add(3))
	require.ErrorIs(t, err, errInvalid)
	assert.EqualError(t, err, "pkg: invalid option: option 2 of 3 is nil")
	assert.Equal(t, []int{1}, got, "options before the nil one are applied, none after")
}

func TestApplyStopsAtTheFirstRefusal(t *testing.T) {
	got, err := run(add(1), add(-1), nil)
	assert.EqualError(t, err, "negative")
	assert.Equal(t, []int{1}, got)
}
