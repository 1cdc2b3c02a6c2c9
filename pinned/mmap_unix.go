//go:build unix

package pinned

import (
	"fmt"
	"github.com/cudapool/cudapool/internal/bytesize"
	"syscall"
)

// mapAnon maps n bytes of private anonymous memory: page aligned, zero, and
// backed by the kernel only when first touched. Tests replace it (and
// unmapAnon) to count mappings and to make mapping fail.
var mapAnon = func(n uint64) ([]byte, error) {
	if n > uint64(maxInt) {
		return nil, fmt.Errorf("%w: %s does not fit in the address space", ErrInvalidSize, bytesize.Format(n))
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("pinned: mmap of %s: %w", bytesize.Format(n), err)
	}
	return b, nil
}

// unmapAnon returns memory from mapAnon to the system.
var unmapAnon = func(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("pinned: munmap of %s: %w", bytesize.Format(uint64(len(b))), err)
	}
	return nil
}
