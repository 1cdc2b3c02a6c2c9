package kvcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdmit(t *testing.T) {
	for _, tt := range []struct {
		name      string
		watermark float64
		held      int // tokens of a running sequence, its pages held
		cached    int // tokens of a freed sequence 0..cached-1, its full pages cached
		prompt    []int32
		n         int
		needed    int // 0: admitted
		free      int
		reserve   int
	}{
		{"fits", 0, 0, 0, toks(0, 10), 6, 0, 0, 0},
		{"exactly all pages", 0, 0, 0, toks(0, 30), 2, 0, 0, 0},
		{"one token too many", 0, 0, 0, toks(0, 30), 3, 9, 8, 0},
		{"the watermark keeps one", 0.125, 0, 0, toks(0, 30), 2, 8, 8, 1},
		{"a running sequence holds pages", 0, 12, 0, toks(100, 20), 1, 6, 5, 0},
		{"cached pages count as free", 0, 0, 16, toks(100, 32), 0, 0, 0, 0},
		{"its own prefix is not needed", 0, 12, 16, toks(0, 20), 0, 0, 0, 0},
		{"but is not free for the rest", 0, 12, 16, toks(0, 24), 0, 2, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newCache(t, WithPages(8), WithWatermark(tt.watermark))
			if tt.cached > 0 {
				s := c.Create()
				_, err := s.Append(toks(0, tt.cached))
				require.NoError(t, err)
				require.NoError(t, s.Free())
			}
			if tt.held > 0 {
				_, err := c.Create().Append(toks(1000, tt.held))
				require.NoError(t, err)
			}
			before := c.Stats()
			err := c.Admit(tt.prompt, tt.n)
			assert.Equal(t, before, c.Stats(), "Admit takes nothing")
			if tt.needed == 0 {
				require.NoError(t, err)
				s := c.Create()
				_, err = s.Append(append(tt.prompt, toks(5000, tt.n)...))
				require.NoError(t, err, "what Admit admits fits")
				return
			}
			var np *NoPagesError
			require.ErrorAs(t, err, &np)
			require.ErrorIs(t, err, ErrNoPages)
			assert.Equal(t, NoPagesError{Op: "Admit", Seq: -1, Needed: tt.needed, Free: tt.free, Reserve: tt.reserve}, *np)
		})
	}
}

func TestAdmitSaysWhatTheWatermarkKeeps(t *testing.T) {
	c, _, _ := newCache(t, WithPages(8), WithWatermark(0.25))
	err := c.Admit(toks(0, 28), 0)
	require.EqualError(t, err, "kvcache: not enough free pages: Admit for a new sequence needs 7 page(s); 8 free, 2 of them kept by the watermark")
}

// TestAdmitRefusesANegativeN: n is a count of tokens to come; a negative
// one is a mistake, not none.
func TestAdmitRefusesANegativeN(t *testing.T) {
	c, _, _ := newCache(t, WithPages(8))
	for _, prompt := range [][]int32{nil, toks(0, 5)} {
		err := c.Admit(prompt, -1)
		require.ErrorIs(t, err, ErrInvalidOption)
		assert.NotErrorIs(t, err, ErrNoPages)
		assert.Contains(t, err.Error(), "n = -1")
		assert.Contains(t, err.Error(), "want n >= 0")
	}
}
