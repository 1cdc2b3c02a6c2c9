package cudart_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// hiding wraps without saying so.
type hiding struct{ cudart.Full }

// nilUnwrap says it wraps nothing.
type nilUnwrap struct{ cudart.Runtime }

func (nilUnwrap) Unwrap() cudart.Runtime { return nil }

func TestAsFollowsUnwrap(t *testing.T) {
	f := cudarttest.NewFake()
	for _, tt := range []struct {
		name  string
		rt    cudart.Runtime
		found bool
	}{
		{"the fake", f, true},
		{"a wrapper", wrapper{f}, true},
		{"a wrapper of a wrapper", wrapper{wrapper{f}}, true},
		{"a wrapper that hides", hiding{f}, false},
		{"a wrapper of a wrapper that hides", wrapper{hiding{f}}, false},
		{"a wrapper of nothing", nilUnwrap{}, false},
		{"nil", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cudart.As[*cudarttest.Fake](tt.rt)
			assert.Equal(t, tt.found, ok)
			if tt.found {
				assert.Same(t, f, got)
			} else {
				assert.Nil(t, got)
			}
		})
	}
}

// The outermost runtime that is a T is the one found: a wrapper's own
// methods are not bypassed.
func TestAsFindsTheOutermost(t *testing.T) {
	outer := wrapper{wrapper{cudarttest.NewFake()}}
	dev, ok := cudart.As[cudart.Device](outer)
	assert.True(t, ok)
	assert.Equal(t, outer, dev)
}
