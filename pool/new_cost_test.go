package pool_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// BenchmarkNewDefaultOnFake measures pool.New with default options (4 GiB
// device, 8 GiB pinned host by MethodRegister) on the fake, and the Close
// that ends it: what a test that makes a pool pays.
func BenchmarkNewDefaultOnFake(b *testing.B) {
	f := cudarttest.NewFake()
	b.ReportAllocs()
	for b.Loop() {
		p, err := pool.New(f)
		require.NoError(b, err)
		require.NoError(b, p.Close())
	}
}

// TestNewDefaultOnFakeCostsNoMemory: a default pool on the fake leaves its
// arenas untouched, so the process's resident memory grows by at most
// 64 MiB however large they are: pinning on the fake touches no page.
func TestNewDefaultOnFakeCostsNoMemory(t *testing.T) {
	before := residentBytes(t)
	f := cudarttest.NewFakeT(t)
	p, err := pool.New(f)
	require.NoError(t, err)
	after := residentBytes(t)
	require.NoError(t, p.Close())
	assert.LessOrEqual(t, int64(after)-int64(before), int64(64*mib), "resident memory grew from %d MiB to %d MiB", before/mib, after/mib)
}

// residentBytes is the process's resident set size from /proc/self/statm;
// the test skips where there is none.
func residentBytes(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no resident size to read: %v", err)
	}
	fields := strings.Fields(string(b))
	require.GreaterOrEqual(t, len(fields), 2, "/proc/self/statm: %q", b)
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	require.NoError(t, err, "/proc/self/statm resident field")
	return pages * uint64(os.Getpagesize())
}
