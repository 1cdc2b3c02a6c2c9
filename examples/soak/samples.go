package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
)

// sample is the state of the device and the process after a cycle.
type sample struct {
	cycle int
	free  uint64
	rss   uint64 // 0 where it cannot be read
}

// samplePoints are n cycles spread evenly from the first to the last.
func samplePoints(cycles, n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		c := 0
		if n > 1 {
			c = i * (cycles - 1) / (n - 1)
		}
		if len(out) == 0 || out[len(out)-1] != c {
			out = append(out, c)
		}
	}
	return out
}

// take samples the device's free memory and the process's resident set,
// after returning the memory the Go heap no longer uses to the system, so
// that only memory still held counts.
func take(rt cudart.Runtime, cycle int) (sample, error) {
	free, _, err := freeMemory(rt)
	if err != nil {
		return sample{}, err
	}
	debug.FreeOSMemory()
	return sample{cycle: cycle, free: free, rss: residentBytes()}, nil
}

// residentBytes is the process's resident set size from /proc/self/statm,
// or 0 where there is no such file (not Linux).
func residentBytes() uint64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

func rssString(n uint64) string {
	if n == 0 {
		return "n/a"
	}
	return humanize.IBytes(n)
}

// drift is what judge measures over the samples.
type drift struct {
	free      uint64 // largest free memory less the smallest
	rssGrowth uint64 // largest RSS less the first sample's; 0 where RSS is unknown
	rssKnown  bool
}

func measure(samples []sample) drift {
	var d drift
	if len(samples) == 0 {
		return d
	}
	lo, hi := samples[0].free, samples[0].free
	d.rssKnown = samples[0].rss != 0
	for _, s := range samples {
		lo, hi = min(lo, s.free), max(hi, s.free)
		if d.rssKnown && s.rss > samples[0].rss {
			d.rssGrowth = max(d.rssGrowth, s.rss-samples[0].rss)
		}
	}
	d.free = hi - lo
	return d
}

// judge prints the drifts and says whether they are within the limits.
func judge(samples []sample, c config, w io.Writer) error {
	d := measure(samples)
	fmt.Fprintf(w, "\nfree device memory: largest drift %s (%d B), tolerance %s\n", humanize.IBytes(d.free), d.free, humanize.IBytes(c.freeTolerance))
	if d.rssKnown {
		fmt.Fprintf(w, "resident set: grew %s after the first sample, limit %s\n", humanize.IBytes(d.rssGrowth), humanize.IBytes(c.rssLimit))
	} else {
		fmt.Fprintln(w, "resident set: n/a on this system")
	}
	var errs []error
	if d.free > c.freeTolerance {
		errs = append(errs, fmt.Errorf("free device memory drifted by %s over the cycles", humanize.IBytes(d.free)))
	}
	if d.rssKnown && d.rssGrowth > c.rssLimit {
		errs = append(errs, fmt.Errorf("the resident set grew by %s over the cycles", humanize.IBytes(d.rssGrowth)))
	}
	return errors.Join(errs...)
}
