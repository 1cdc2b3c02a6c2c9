//go:build !unix

package pinned

import (
	"fmt"
	"runtime"
)

// mapAnon needs mmap, which this platform lacks: the registering methods
// are unsupported, and Alloc falls back to MethodHostAlloc.
var mapAnon = func(n uint64) ([]byte, error) {
	return nil, fmt.Errorf("%w: the registering methods need mmap, which %s lacks", ErrUnsupported, runtime.GOOS)
}

// unmapAnon is never reached, since mapAnon never succeeds.
var unmapAnon = func(b []byte) error {
	return fmt.Errorf("%w: munmap on %s", ErrUnsupported, runtime.GOOS)
}
