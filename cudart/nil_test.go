package cudart_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart"
)

func TestANilLibIsClosed(t *testing.T) {
	var l *cudart.Lib
	_, err := l.Malloc(0, 256)
	assert.ErrorIs(t, err, cudart.ErrClosed)
	_, _, err = l.MemGetInfo(0)
	assert.ErrorIs(t, err, cudart.ErrClosed)
	_, err = l.MemCreate(0, 2<<20)
	assert.ErrorIs(t, err, cudart.ErrClosed)
	_, err = l.ModuleLoadData(0, "")
	assert.ErrorIs(t, err, cudart.ErrClosed)
	assert.ErrorIs(t, l.Close(), cudart.ErrClosed)
	assert.Empty(t, l.Path())
	assert.Empty(t, l.DriverPath())
}

// Every method of a nil *Lib returns instead of panicking.
func TestNoMethodOfANilLibPanics(t *testing.T) {
	v := reflect.ValueOf((*cudart.Lib)(nil))
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		args := make([]reflect.Value, m.Type().NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type().In(j))
		}
		assert.NotPanics(t, func() {
			if m.Type().IsVariadic() {
				m.CallSlice(args)
			} else {
				m.Call(args)
			}
		}, name)
	}
}
