//go:build !(linux || darwin)

package cudarttest

import (
	"os"
	"syscall"

	"github.com/cudapool/cudapool/align"
)

// mapHost allocates n bytes, page-aligned, from the Go heap where the
// platform has no anonymous mmap the fake relies on. Unlike the mmap version
// it costs the memory at once.
func mapHost(n uint64) ([]byte, error) {
	page := uint64(os.Getpagesize())
	size, err := align.Up(n, page)
	if err != nil || size+page > uint64(maxInt) {
		return nil, syscall.ENOMEM
	}
	raw := make([]byte, size+page)
	off := int(page - uint64(addrOf(raw))%page)
	if off == int(page) {
		off = 0
	}
	return raw[off : off+int(size) : off+int(size)], nil
}

// unmapHost leaves the memory to the garbage collector.
func unmapHost([]byte) error { return nil }

const maxInt = int(^uint(0) >> 1)
