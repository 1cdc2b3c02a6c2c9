// Command bandwidth measures, in one run on one device, why pinned memory
// matters and what it costs: host-to-device and device-to-host copy
// bandwidth from ordinary Go memory, from cudaMallocHost memory and from the
// regions of each of the pinned package's methods, and the time each pinned
// kind takes to pin and to free.
//
//	go run ./examples/bandwidth [-runtime=auto|cuda|fake] [-size 1GiB] [-pin-size 4GiB] [-reps 5] [-svg out.svg]
//
// Each figure is the median of -reps: copies of -size bytes with
// synchronous cudaMemcpy, and pinning and freeing of -pin-size bytes. The
// sizes default to 1 GiB and 4 GiB on CUDA, and to 32 MiB and 64 MiB on the
// fake, whose figures say nothing of a GPU and which copies and pins on the
// CPU: a few seconds, not minutes and gigabytes. The
// table's last lines compare the pinned package's default method with
// cudaMallocHost. -svg also draws the figures as a bar chart.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

// config is the parsed command line.
type config struct {
	runtime       string
	size, pinSize uint64
	reps          int
	svg           string
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "bandwidth: %v\n", err)
		return 2
	}
	if err := measureAll(c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bandwidth: %v\n", err)
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (config, error) {
	cmd := cli.New("bandwidth", about, stderr)
	var c config
	cmd.RuntimeVar(&c.runtime)
	cmd.Func("size", "bytes per copy, e.g. 1GiB, 8MiB (default 1GiB on CUDA, 32MiB on the fake)", bytesFlag(&c.size))
	cmd.Func("pin-size", "bytes pinned and freed to time pinning, e.g. 4GiB (default 4GiB on CUDA, 64MiB on the fake)", bytesFlag(&c.pinSize))
	cmd.IntVar(&c.reps, "reps", 5, "repetitions of each measurement; the median is reported")
	cmd.StringVar(&c.svg, "svg", "", "also write the figures as an SVG bar chart to this file")
	if err := cmd.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, errUsage
	}
	if cmd.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", cmd.Args())
	}
	if c.reps <= 0 {
		return c, fmt.Errorf("-reps %d: want at least 1", c.reps)
	}
	return c, nil
}

// orDefault is n, or where the flag left it 0, cuda on CUDA and fake on
// the fake.
func orDefault(n, cuda, fake uint64, onCUDA bool) uint64 {
	switch {
	case n != 0:
		return n
	case onCUDA:
		return cuda
	}
	return fake
}

// errUsage is a command line the flag package has already complained of.
var errUsage = errors.New("bad command line")

// bytesFlag parses a human size of at least one byte into dst.
func bytesFlag(dst *uint64) func(string) error {
	return func(s string) error {
		n, err := humanize.ParseBytes(s)
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("want at least 1 byte")
		}
		*dst = n
		return nil
	}
}

// measureAll measures every source, reporting each phase on progress as it
// starts, since a run takes a minute.
func measureAll(c config, stdout, progress io.Writer) (err error) {
	rt, err := choose.Open(c.runtime)
	if err != nil {
		return err
	}
	defer rt.Close()
	note := ""
	if !rt.CUDA {
		note = " (fake runtime: not a GPU timing)"
	}
	c.size, c.pinSize = orDefault(c.size, 1<<30, 32<<20, rt.CUDA), orDefault(c.pinSize, 4<<30, 64<<20, rt.CUDA)
	fmt.Fprintf(stdout, "runtime: %s\ncopies of %s and pinning of %s, median of %d%s\n\n",
		rt.Description, humanize.IBytes(c.size), humanize.IBytes(c.pinSize), c.reps, note)

	// The device buffer is taken first, which also creates the CUDA
	// context, so that no timed call pays for it.
	dev, err := rt.Malloc(0, c.size)
	if err != nil {
		return fmt.Errorf("device buffer of %s: %w", humanize.IBytes(c.size), err)
	}
	defer func() { err = errors.Join(err, rt.Free(0, dev)) }()

	var results []result
	for i, s := range sources {
		phase := func(what string) {
			fmt.Fprintf(progress, "bandwidth: [%d/%d] %s: %s\n", i+1, len(sources), s.name, what)
		}
		r, err := measure(rt, s, dev, c, phase)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, r)
	}
	if err := printTable(stdout, results, c.pinSize); err != nil {
		return err
	}
	if c.svg != "" {
		if err := os.WriteFile(c.svg, chart(results, c), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nchart: %s\n", c.svg)
	}
	return nil
}

func printTable(w io.Writer, results []result, pinSize uint64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "host memory\tpinned by\tpin %s\tfree\tH2D GB/s\tD2H GB/s\n", humanize.IBytes(pinSize))
	for _, r := range results {
		pin, free := "-", "-"
		if r.pinned {
			pin, free = duration(r.pin), duration(r.free)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%.1f\n", r.name, r.via, pin, free, r.h2d, r.d2h)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	base, reg := results[baseline], results[featured]
	fmt.Fprintf(w, "\n%s against %s: H2D %.1f%%, D2H %.1f%% of its bandwidth; pins %s in %s against %s, frees in %s against %s\n",
		reg.name, base.name, percent(reg.h2d, base.h2d), percent(reg.d2h, base.d2h),
		humanize.IBytes(pinSize), duration(reg.pin), duration(base.pin), duration(reg.free), duration(base.free))
	return nil
}

func percent(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * a / b
}

// duration formats d with three significant digits or so, in the unit that
// suits it.
func duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// about is what -h prints before the flags.
const about = `bandwidth measures why pinned memory matters and what it costs, on one
device in one run: host-to-device and device-to-host copy bandwidth from
ordinary Go memory, from cudaMallocHost memory and from each of the pinned
package's methods, and the time each takes to pin and to free -pin-size
bytes; each figure is the median of -reps. Progress goes to standard error.
Timings on the fake runtime are not GPU timings.`
