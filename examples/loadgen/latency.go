package loadgen

import (
	"slices"
	"time"
)

// Percentiles are the median and the 99th percentile of a latency.
type Percentiles struct{ P50, P99 time.Duration }

// PercentilesOf are d's percentiles, sorting d in place. d must not be
// empty.
func PercentilesOf(d []time.Duration) Percentiles {
	slices.Sort(d)
	return Percentiles{d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]}
}

// Round keeps three significant digits or so of a latency, for a table.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}
