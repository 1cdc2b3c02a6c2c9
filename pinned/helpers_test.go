package pinned

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// len is the number of ranges pinned now.
func (r *registry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.spans)
}

// mappings counts the mmaps the package holds, by wrapping mapAnon and
// unmapAnon for the rest of the test. Tests that use it must not run in
// parallel.
type mappings struct {
	mu   sync.Mutex
	live map[uintptr]int
}

func countMappings(t *testing.T) *mappings {
	t.Helper()
	m := &mappings{live: map[uintptr]int{}}
	mapOrig, unmapOrig := mapAnon, unmapAnon
	t.Cleanup(func() { mapAnon, unmapAnon = mapOrig, unmapOrig })
	mapAnon = func(n uint64) ([]byte, error) {
		b, err := mapOrig(n)
		if err == nil {
			m.mu.Lock()
			m.live[addr(b)] = len(b)
			m.mu.Unlock()
		}
		return b, err
	}
	unmapAnon = func(b []byte) error {
		err := unmapOrig(b)
		if err == nil {
			m.mu.Lock()
			delete(m.live, addr(b))
			m.mu.Unlock()
		}
		return err
	}
	return m
}

func (m *mappings) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// withChunk lowers registerChunk to n bytes for the rest of the test.
func withChunk(t *testing.T, n uint64) {
	t.Helper()
	orig := registerChunk
	t.Cleanup(func() { registerChunk = orig })
	registerChunk = n
}

// chunkedFake is a fake, with registrations made in chunks of chunk bytes
// and the package's mappings counted.
func chunkedFake(t *testing.T) (*cudarttest.Fake, *mappings) {
	t.Helper()
	withChunk(t, chunk)
	maps := countMappings(t)
	return cudarttest.NewFakeT(t), maps
}

// requireNothingPinned fails t unless the fake holds nothing, the package
// tracks no range and (with m) no mmap is left.
func requireNothingPinned(t *testing.T, f *cudarttest.Fake, m *mappings) {
	t.Helper()
	require.NoError(t, f.CheckLeaks())
	require.Zero(t, pinnedRanges.len(), "ranges still tracked as pinned")
	if m != nil {
		require.Zero(t, m.count(), "mmaps still mapped")
	}
}

// pattern is n bytes that differ from their neighbours and from another
// seed's.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}
