// Command callcost times the binding's cost per CUDA call: cudaMemGetInfo on
// device 0, and a 4-byte device-to-device cudaMemcpy, each made -rounds
// times -calls times in a row. It prints the median, fastest and slowest
// round in ns per call, and how the binary was built (cgo or not), so that
// two builds of the binding can be compared on one GPU.
//
//	go run ./examples/callcost [-runtime=auto|cuda|fake] [-rounds 10] [-calls 10000]
//
// The timing uses only cudart.Runtime, so that it measures any version of
// the binding the same way.
package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("callcost", about, stderr)
	which := cmd.Runtime()
	rounds := cmd.Int("rounds", 10, "timed rounds per call; the median, fastest and slowest are reported")
	calls := cmd.Int("calls", 10000, "calls per round")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if *rounds < 1 || *calls < 1 {
		fmt.Fprintf(stderr, "callcost: -rounds (%d) and -calls (%d) must be at least 1\n", *rounds, *calls)
		return 2
	}
	full, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer full.Close()
	var rt cudart.Runtime = full
	fmt.Fprintf(stdout, "runtime: %s\nbuild: %s\n", full.Description, buildMode())
	if !full.CUDA {
		fmt.Fprintln(stdout, "ns per call on the fake runtime (fake runtime: not a GPU timing)")
	}
	if err := measure(stdout, stderr, rt, *rounds, *calls); err != nil {
		return cmd.Fail(1, err)
	}
	return 0
}

// buildMode is the binary's CGO_ENABLED setting and VCS revision, as the Go
// toolchain recorded them.
func buildMode() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	cgo, rev := "unknown", "unknown revision"
	for _, s := range bi.Settings {
		switch s.Key {
		case "CGO_ENABLED":
			cgo = s.Value
		case "vcs.revision":
			rev = s.Value
		}
	}
	mode := "no cgo"
	if cgo == "1" {
		mode = "cgo"
	}
	return fmt.Sprintf("%s (CGO_ENABLED=%s), %s, %s", mode, cgo, bi.GoVersion, rev)
}

// measure times each call and prints one line per call.
func measure(w, progress io.Writer, rt cudart.Runtime, rounds, calls int) error {
	src, err := rt.Malloc(0, 256)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Free(0, src) }()
	dst, err := rt.Malloc(0, 256)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Free(0, dst) }()
	ops := []struct {
		name string
		call func() error
	}{
		{"cudaMemGetInfo(0)", func() error { _, _, err := rt.MemGetInfo(0); return err }},
		{"cudaMemcpy 4 B D2D", func() error {
			return rt.Memcpy(0, cudart.DeviceMem(dst, 4), cudart.DeviceMem(src, 4), cudart.DeviceToDevice)
		}},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "call\tcalls\tmedian ns/call\tmin\tmax\t\n")
	for _, op := range ops {
		fmt.Fprintf(progress, "callcost: timing %s, %d rounds of %d calls\n", op.name, rounds, calls)
		ns, err := timeRounds(rt, op.call, rounds, calls)
		if err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
		slices.Sort(ns)
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t\n", op.name, rounds*calls, median(ns), ns[0], ns[len(ns)-1])
	}
	return tw.Flush()
}

// timeRounds makes call calls times per round, after one untimed round that
// warms CUDA up, and returns each round's ns per call. The device is
// synchronised after each round, inside the timing, so that work queued by
// asynchronous copies is paid for by the round that queued it.
func timeRounds(rt cudart.Runtime, call func() error, rounds, calls int) ([]float64, error) {
	ns := make([]float64, 0, rounds)
	for r := -1; r < rounds; r++ {
		start := time.Now()
		for range calls {
			if err := call(); err != nil {
				return nil, err
			}
		}
		if err := rt.DeviceSynchronize(0); err != nil {
			return nil, err
		}
		if r >= 0 {
			ns = append(ns, float64(time.Since(start).Nanoseconds())/float64(calls))
		}
	}
	return ns, nil
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// about is what -h prints before the flags.
const about = `callcost times what one CUDA call costs through the binding: cudaMemGetInfo
and a 4-byte device-to-device cudaMemcpy, -calls times in each of -rounds
rounds, printing the median, fastest and slowest round in ns per call and
how the binary was built, so that two builds can be compared on one GPU.
Timings on the fake runtime are not GPU timings.`
