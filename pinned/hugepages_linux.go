package pinned

import (
	"fmt"
	"syscall"
)

// adviseHugePages asks the kernel for transparent huge pages over b (on)
// or forbids them (off), whatever the system default. It is advice: with
// transparent huge pages disabled, the memory still works, in 4 KiB pages.
func adviseHugePages(b []byte, on bool) error {
	advice := syscall.MADV_NOHUGEPAGE
	if on {
		advice = syscall.MADV_HUGEPAGE
	}
	if err := syscall.Madvise(b, advice); err != nil {
		return fmt.Errorf("pinned: madvise(huge pages %t): %w", on, err)
	}
	return nil
}
