package streamdev

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart"
)

// teller answers StreamDevice with d and err; the other methods of
// cudart.Streams are not called.
type teller struct {
	cudart.Streams
	d   int
	err error
}

func (t teller) StreamDevice(int, cudart.Stream) (int, error) { return t.d, t.err }

func TestOf(t *testing.T) {
	refused := fmt.Errorf("stream 0x1: %w", cudart.ErrInvalidResourceHandle)
	tests := []struct {
		name  string
		rt    any
		d     int
		known bool
		err   error
	}{
		{"no cudart.Streams", struct{}{}, 0, false, nil},
		{"cannot tell", teller{err: fmt.Errorf("old runtime: %w", cudart.ErrNotSupported)}, 0, false, nil},
		{"told", teller{d: 1}, 1, true, nil},
		{"refused", teller{err: refused}, 0, true, refused},
	}
	for _, tc := range tests {
		d, known, err := Of(tc.rt, 0, 1)
		assert.Equal(t, tc.d, d, tc.name)
		assert.Equal(t, tc.known, known, tc.name)
		assert.Equal(t, tc.err, err, tc.name)
	}
}
