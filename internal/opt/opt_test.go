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

// sealed is how a package declares its Option over its config, here []int.
type sealed interface{ Option[[]int] }

func TestConfigureAppliesFuncsAndSetsInOrder(t *testing.T) {
	push := func(n int) sealed { return Set(func(s *[]int) { *s = append(*s, n) }) }
	refuse := Func[[]int](func(*[]int) error { return errors.New("refused") })
	var got []int
	require.NoError(t, Configure(&got, []sealed{push(1), push(2)}, errInvalid))
	assert.Equal(t, []int{1, 2}, got)

	got = nil
	err := Configure(&got, []sealed{push(1), nil, push(3)}, errInvalid)
	assert.EqualError(t, err, "pkg: invalid option: option 2 of 3 is nil")
	assert.Equal(t, []int{1}, got)

	got = nil
	assert.EqualError(t, Configure(&got, []sealed{push(1), refuse, push(3)}, errInvalid), "refused")
	assert.Equal(t, []int{1}, got)
}
