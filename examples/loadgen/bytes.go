package loadgen

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// SignedBytes formats a difference of device memory (what a run took
// outside the pool): exact bytes, and in binary units past 1 KiB.
func SignedBytes(n int64) string {
	sign, abs := "", uint64(n)
	if n < 0 {
		sign, abs = "-", uint64(-n)
	}
	if abs < 1024 {
		return fmt.Sprintf("%s%d B", sign, abs)
	}
	return fmt.Sprintf("%s%s (%s%d B)", sign, humanize.IBytes(abs), sign, abs)
}
