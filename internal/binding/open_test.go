package binding

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/dl"
)

var (
	errInvalid  = errors.New("pkg: invalid option")
	errNotFound = errors.New("pkg: library not found")
	errNoSymbol = errors.New("pkg: symbol not found")
)

// runtimeOnly is a runtime that cannot select devices.
type runtimeOnly struct{ cudart.Runtime }

func TestChoose(t *testing.T) {
	fake := cudarttest.NewFakeT(t)
	f, dev, err := Choose(fake, "Lib", errInvalid)
	require.NoError(t, err)
	assert.Same(t, fake, f, "the fake opens the fake's implementation")
	assert.NotNil(t, dev, "the fake selects devices")

	_, _, err = Choose(nil, "Lib", errInvalid)
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, err.Error(), "nil runtime")

	_, _, err = Choose(runtimeOnly{fake}, "Lib", errInvalid)
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, err.Error(), "cannot select devices (cudart.Device), which Lib needs")
}

func TestLoadFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		cause error
		ok    bool
	}{
		{"none loads", &dl.Failure{Tried: []string{"a: no such file"}}, errNotFound, true},
		{"a symbol lacks", fmt.Errorf("wrapped: %w", &dl.Failure{Tried: []string{"a: lacks f"}, Missing: []string{"f"}}), errNoSymbol, true},
		{"another error", errors.New("other"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tried, cause, ok := LoadFailure(tc.err, errNotFound, errNoSymbol)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.cause, cause)
			if ok {
				assert.Len(t, tried, 1)
			}
		})
	}
}

func TestLoadMessage(t *testing.T) {
	got := LoadMessage("pkg", "libpkg", errNoSymbol, []string{"libpkg.so.2: lacks f", "/opt/libpkg.so.2: no such file"})
	assert.Equal(t, "pkg: cannot load libpkg (symbol not found); tried:\n  libpkg.so.2: lacks f\n  /opt/libpkg.so.2: no such file", got)
}
