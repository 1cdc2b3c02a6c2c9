// Package bytesize formats byte counts for every error, log line and example
// output of the module, so that one message never mixes units: always binary
// units (B, KiB, MiB, GiB, TiB), three significant digits at most.
package bytesize

import (
	"strconv"

	"github.com/dustin/go-humanize"
)

// Format is n in binary units, e.g. "256 B", "64 MiB", "4.0 GiB".
func Format(n uint64) string { return humanize.IBytes(n) }

// Exact is n with no byte lost, for messages where the size is the point (an
// overflow, a mismatch): Format(n) where that is exact ("4.0 KiB" is 4096,
// "2.5 MiB"), the count of bytes below 64 KiB ("4097 B"), and above it the
// whole units plus the rest ("4.0 GiB + 1 B").
func Exact(n uint64) string {
	if n < 1<<10 {
		return Format(n)
	}
	unit := uint64(1) << 10
	for unit <= n>>10 {
		unit <<= 10
	}
	// Format shows one decimal below ten units: x.0 and x.5 are exact there.
	step := unit
	if n < 10*unit {
		step = unit / 2
	}
	switch {
	case n%step == 0:
		return Format(n)
	case n < 64<<10:
		return strconv.FormatUint(n, 10) + " B"
	}
	whole := n / unit * unit
	return Format(whole) + " + " + Exact(n-whole)
}
