// Command soak shows, on a real GPU, that cudapool fails cleanly when the
// device is exhausted and leaks nothing over a long run.
//
//	go run ./examples/soak [-runtime=auto|cuda|fake] [-cycles 100000] [-buffers 64] [-growable] [-trim]
//
// First it exhausts the device: it reads the free device memory, asks New
// for a device arena 1 GiB larger (and, with -growable, maps a buffer larger
// than what is free), prints the error and the free memory before and
// after, which must be equal; then it queues more than a small arena holds
// and prints the *pool.ExhaustedError. Then it runs -cycles cycles of
// -buffers requests of mixed sizes in both arenas (some with lifetimes),
// Satisfy, a host -> device -> host round trip through two buffers every
// -check-every cycles, and ReleaseAll; at -samples points it records the
// device's free memory and the process's resident set size, prints them as
// a table with the largest drift of each, and exits 1 when free memory
// drifted by more than -free-tolerance-mib or the resident set grew by more
// than -rss-limit-mib after the first sample.
package main

import (
	"fmt"
	"io"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

// config is the command line.
type config struct {
	cycles, buffers, samples, checkEvery int
	growable, trim                       bool
	deviceBytes, hostBytes               uint64
	freeTolerance, rssLimit              uint64
	// note follows every timing: it says when they are not a GPU's.
	note string
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("soak", about, stderr)
	which := cmd.Runtime()
	var c config
	cmd.IntVar(&c.cycles, "cycles", 0, "ReleaseAll/Satisfy cycles (default 100000 on CUDA, 20000 on the fake)")
	cmd.IntVar(&c.buffers, "buffers", 64, "requests per cycle, of mixed sizes, a quarter of them host buffers")
	cmd.IntVar(&c.samples, "samples", 10, "points at which free memory and RSS are sampled")
	cmd.IntVar(&c.checkEvery, "check-every", 1000, "cycles between host -> device -> host round trips")
	cmd.BoolVar(&c.growable, "growable", false, "use a growable device arena (CUDA virtual memory)")
	cmd.BoolVar(&c.trim, "trim", false, "with -growable: give the arena's memory back at every ReleaseAll")
	deviceMiB := cmd.Uint64("device-mib", 256, "device arena size (maximum, with -growable), MiB")
	hostMiB := cmd.Uint64("host-mib", 64, "pinned host arena size, MiB")
	tolMiB := cmd.Uint64("free-tolerance-mib", 2, "largest accepted change of free device memory, MiB")
	rssMiB := cmd.Uint64("rss-limit-mib", 16, "largest accepted RSS growth after the first sample, MiB")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	c.deviceBytes, c.hostBytes = *deviceMiB<<20, *hostMiB<<20
	c.freeTolerance, c.rssLimit = *tolMiB<<20, *rssMiB<<20
	if c.cycles < 0 || c.buffers < 2 || c.samples < 2 || c.checkEvery < 1 || c.deviceBytes == 0 || c.hostBytes == 0 {
		return cmd.Fail(2, "-cycles (0: the default) and -check-every must be at least 1, -buffers and -samples at least 2, the arenas not empty")
	}
	if c.trim && !c.growable {
		return cmd.Fail(2, "-trim needs -growable")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\n\n", rt.Description)

	if err := exhaust(rt, c, stdout); err != nil {
		fmt.Fprintf(stderr, "soak: exhaustion: %v\n", err)
		return 1
	}
	if !rt.CUDA {
		c.note = " (fake runtime: not a GPU timing)"
	}
	// The fake does on the CPU what CUDA does on the device: fewer cycles
	// keep its run to seconds.
	switch {
	case c.cycles > 0:
	case rt.CUDA:
		c.cycles = 100000
	default:
		c.cycles = 20000
	}
	samples, err := cycle(rt, c, stdout, stderr)
	if err != nil {
		return cmd.Fail(1, err)
	}
	if err := judge(samples, c, stdout); err != nil {
		fmt.Fprintf(stderr, "soak: FAIL: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "PASS")
	return 0
}

// freeMemory is the device's free memory once it is idle.
func freeMemory(rt cudart.Runtime) (free, total uint64, err error) {
	if err := rt.DeviceSynchronize(0); err != nil {
		return 0, 0, err
	}
	return rt.MemGetInfo(0)
}

// unchanged checks that free memory is back where it was, within tol.
func unchanged(w io.Writer, before, after, tol uint64) error {
	d := absDiff(before, after)
	fmt.Fprintf(w, "  free device memory: %s (%d B) before, %s (%d B) after: %s\n",
		humanize.IBytes(before), before, humanize.IBytes(after), after, signed(before, after))
	if d > tol {
		return fmt.Errorf("free device memory changed by %s (tolerance %s): something was left allocated", humanize.IBytes(d), humanize.IBytes(tol))
	}
	return nil
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// signed describes the change from before to after, e.g. "unchanged" or
// "-2.0 MiB".
func signed(before, after uint64) string {
	switch {
	case after == before:
		return "unchanged"
	case after > before:
		return "+" + humanize.IBytes(after-before)
	}
	return "-" + humanize.IBytes(before-after)
}

// about is what -h prints before the flags.
const about = `soak shows that cudapool fails cleanly when the device is exhausted and
leaks nothing over a long run: it asks for an arena larger than the free
memory and checks the free memory is unchanged, then runs -cycles cycles of
-buffers requests, Satisfy and ReleaseAll, sampling free device memory and
the resident set, and exits 1 when either drifts past its tolerance. Timings
on the fake runtime are not GPU timings.`
