//go:build linux || darwin

package cudarttest

import (
	"os"
	"syscall"

	"github.com/cudapool/cudapool/align"
)

// mapHost maps n bytes (rounded up to whole pages) of anonymous private
// memory. The kernel backs pages on first touch, so a large pinned arena
// costs only what is used; MAP_NORESERVE keeps Linux from counting it against
// the overcommit limit either.
func mapHost(n uint64) ([]byte, error) {
	size, err := align.Up(n, uint64(os.Getpagesize()))
	if err != nil || size > uint64(maxInt) {
		return nil, syscall.ENOMEM
	}
	return syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|mapNoReserve)
}

// unmapHost returns memory from mapHost to the system.
func unmapHost(b []byte) error { return syscall.Munmap(b) }

const maxInt = int(^uint(0) >> 1)
