package pinned

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSharesCoverEveryPageOnce(t *testing.T) {
	for _, c := range []struct{ n, page, workers int }{
		{0, 4096, 4}, {1, 4096, 4}, {4096, 4096, 4}, {4097, 4096, 4},
		{10 * 4096, 4096, 3}, {10*4096 - 5, 4096, 16}, {1 << 20, 4096, 1}, {7 * 16384, 16384, 7},
	} {
		t.Run(fmt.Sprint(c.n, "/", c.page, "/", c.workers), func(t *testing.T) {
			s := shares(c.n, c.page, c.workers)
			require.NotEmpty(t, s)
			assert.LessOrEqual(t, len(s), max(c.workers, 1))
			assert.Equal(t, 0, s[0][0])
			assert.Equal(t, c.n, s[len(s)-1][1])
			for i, sh := range s {
				assert.Zero(t, sh[0]%c.page, "share %d starts inside a page", i)
				assert.LessOrEqual(t, sh[0], sh[1])
				if i > 0 {
					assert.Equal(t, s[i-1][1], sh[0], "share %d does not start where %d ends", i, i-1)
				}
				assert.LessOrEqual(t, sh[1]-sh[0], (s[0][1] - s[0][0]), "the first share is the longest")
			}
		})
	}
}

func TestTouchWritesOneBytePerPage(t *testing.T) {
	page := os.Getpagesize()
	for _, workers := range []int{1, 3, 64} {
		b := bytes.Repeat([]byte{0xFF}, 13*page+100)
		touch(b, workers)
		for i, v := range b {
			if i%page == 0 {
				require.Zero(t, v, "workers %d: page at %d not touched", workers, i)
			} else {
				require.Equal(t, byte(0xFF), v, "workers %d: byte %d written", workers, i)
			}
		}
	}
}
