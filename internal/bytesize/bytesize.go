// Package bytesize formats byte counts for every error, log line and example
// output of the module, so that one message never mixes units: always binary
// units (B, KiB, MiB, GiB, TiB), three significant digits at most.
package bytesize

import "github.com/dustin/go-humanize"

// Format is n in binary units, e.g. "256 B", "64 MiB", "4.0 GiB".
func Format(n uint64) string { return humanize.IBytes(n) }
