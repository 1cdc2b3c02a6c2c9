package cudart

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/internal/zerocall"
)

func TestANilLibraryIsClosed(t *testing.T) {
	var l *library
	_, err := l.Malloc(0, 256)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = l.MemGetInfo(0)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = l.MemCreate(0, 2<<20)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = l.ModuleLoadData(0, "")
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, l.Close(), ErrClosed)
	assert.Empty(t, l.Path())
	assert.Empty(t, l.DriverPath())
}

// Every method of a nil *library returns instead of panicking.
func TestNoMethodOfANilLibraryPanics(t *testing.T) {
	v := reflect.ValueOf((*library)(nil))
	assert.Equal(t, reflect.TypeFor[Library]().NumMethod(), v.NumMethod(), "every method of Library is called")
	zerocall.Methods(v, func(name string, call func()) { assert.NotPanics(t, call, name) })
}
