package cudarttest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestSparseMatchesFlatMemory is a property test: random writes, fills and
// copies on lazily backed memory read back exactly as on a plain slice, and
// zeros never back a chunk that was never written.
func TestSparseMatchesFlatMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const size = 5*chunkSize + 123
	s := &sparse{size: size}
	model := make([]byte, size)
	rnd := func() (off, n uint64) {
		off = r.Uint64N(size)
		return off, 1 + r.Uint64N(min(size-off, 2*chunkSize))
	}
	for i := range 500 {
		off, n := rnd()
		switch r.IntN(4) {
		case 0:
			p := make([]byte, n)
			for j := range p {
				if r.IntN(4) == 0 {
					p[j] = byte(r.Uint32())
				}
			}
			s.write(off, p)
			copy(model[off:], p)
		case 1:
			v := byte(r.IntN(3))
			s.fill(off, n, v)
			fillBytes(model[off:off+n], v)
		case 2:
			// Overlapping copies are undefined in CUDA; the model skips them.
			src, _ := rnd()
			n = min(n, size-src)
			if src < off+n && off < src+n {
				continue
			}
			buf := make([]byte, n)
			readSpans(buf, []span{{s, src, n}})
			copySpans([]span{{s, off, n}}, []span{{s, src, n}})
			copy(model[off:off+n], buf)
		default:
			got := make([]byte, n)
			readSpans(got, []span{{s, off, n}})
			require.True(t, bytes.Equal(model[off:off+n], got), "step %d: read [%d, +%d) differs", i, off, n)
		}
	}
	got := make([]byte, size)
	readSpans(got, []span{{s, 0, size}})
	assert.True(t, bytes.Equal(model, got))
}

func TestZerosDoNotBackMemory(t *testing.T) {
	s := &sparse{size: 4 * chunkSize}
	s.write(10, make([]byte, 2*chunkSize))
	s.fill(0, 4*chunkSize, 0)
	assert.Zero(t, s.backed(), "writing zeros over nothing backs nothing")
	s.fill(chunkSize+1, 1, 9)
	assert.Equal(t, uint64(chunkSize), s.backed())
	s.fill(chunkSize, chunkSize, 0)
	assert.Zero(t, s.backed(), "zeroing a whole chunk drops it")
	small := &sparse{size: 300}
	small.fill(0, 1, 1)
	assert.Equal(t, uint64(300), small.backed(), "a small allocation holds only its own size")
}

func TestHugeAllocationBacksOnlyWhatIsWritten(t *testing.T) {
	f := NewFake()
	const n = 32 << 30
	p, err := f.Malloc(0, n)
	require.NoError(t, err)
	q, err := f.Malloc(0, n)
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, p.Add(n/2), 1, 10))
	require.NoError(t, f.Memcpy(0, cudart.DeviceMem(q, n), cudart.DeviceMem(p, n), cudart.DeviceToDevice))
	require.NoError(t, f.Memset(0, p, 0, n))
	for _, a := range []cudart.DevicePtr{p, q} {
		r := f.containing(uint64(a))
		require.NotNil(t, r)
		assert.LessOrEqual(t, r.store.backed(), uint64(chunkSize), "%s backs at most the one chunk written", a)
	}
	require.NoError(t, f.Free(0, p))
	require.NoError(t, f.Free(0, q))
}
