package pool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// woken reports a receive, whether or not the context can end, and the
// context's end only when nothing was received.
func TestWoken(t *testing.T) {
	live, stop := context.WithCancel(context.Background())
	defer stop()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		ready bool
		want  bool
	}{
		{"never done, received", context.Background(), true, true},
		{"can end, received", live, true, true},
		{"ended, nothing received", ended, false, false},
	}
	for _, tc := range tests {
		ch := make(chan struct{}, 1)
		if tc.ready {
			ch <- struct{}{}
		}
		assert.Equal(t, tc.want, woken(tc.ctx, ch), tc.name)
	}
}
