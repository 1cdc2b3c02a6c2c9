// Command vector compares, in one run on one device, growing a device buffer
// with cudaMalloc (allocate the new size, copy, free the old: realloc) and
// with CUDA virtual memory (vmem.Vector: map more memory after the buffer,
// nothing copied), in two measures:
//
//   - the time to grow by doubling from -from (2 MiB) to -max (32 GiB, or
//     less where the device has less free: realloc needs 1.5 times the
//     final size at its last step), the median of -reps rounds, with the
//     number of CUDA calls each path made;
//
//   - the largest buffer each reaches in -step (1 GiB) steps, as a share of
//     the memory free when the probe starts.
//
//     go run ./examples/vector [-runtime=auto|cuda|fake] [-max 32GiB] [-step 1GiB]
//
// It never asks for more memory than the device has free, less -margin
// (64 MiB) for CUDA's own use: the doubling's final size is chosen from
// cudaMemGetInfo, and every probe step checks it first. The realloc probe
// copies the whole buffer at every step, so it stops at -probe bytes and
// after -realloc-budget, whichever comes first. On the fake, small sizes keep
// a run quick: -max 256MiB -step 16MiB -probe 1GiB.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

// config is the flags, parsed.
type config struct {
	from, max, step, probe uint64
	// margin is left free for CUDA's own allocations (contexts, kernels'
	// local memory), so that no step takes the device to its last byte.
	margin uint64
	reps   int
	budget time.Duration
	// methods are the doubling methods to time, in this order: the first
	// one runs on a device no other method has churned yet.
	methods []string
	noProbe bool
	// note follows every timing: it says when they are not a GPU's.
	note string
}

// doublings are the growth methods -methods names.
var doublings = map[string]func(*counting, uint64, uint64) (growth, error){
	"realloc": reallocDoubling,
	"vmem":    vmemDoubling,
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("vector", about, stderr)
	which := cmd.Runtime()
	c := config{from: 2 << 20, max: 32 << 30, step: 1 << 30, margin: 64 << 20}
	cmd.Var((*sizeFlag)(&c.from), "from", "size the doubling starts from")
	cmd.Var((*sizeFlag)(&c.max), "max", "size the doubling grows to, at most (clamped to what is free)")
	cmd.Var((*sizeFlag)(&c.step), "step", "step of the largest-reachable probes")
	cmd.Var((*sizeFlag)(&c.probe), "probe", "largest size the probes try (0: all free memory)")
	cmd.Var((*sizeFlag)(&c.margin), "margin", "memory every step leaves free for CUDA's own use")
	cmd.IntVar(&c.reps, "reps", 5, "rounds of the doubling; the median is reported")
	cmd.DurationVar(&c.budget, "realloc-budget", time.Minute, "time after which the realloc probe stops")
	methods := cmd.String("methods", "realloc,vmem", "doubling methods to time, in order: realloc, vmem")
	noProbe := cmd.Bool("no-probe", false, "skip the largest-reachable probes")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	c.methods = strings.Split(*methods, ",")
	for _, m := range c.methods {
		if _, ok := doublings[m]; !ok {
			fmt.Fprintf(stderr, "vector: unknown method %q in -methods: want realloc and/or vmem\n", m)
			return 2
		}
	}
	c.noProbe = *noProbe
	if c.from == 0 || c.step == 0 || c.reps <= 0 || c.max < c.from {
		return cmd.Fail(2, "-from, -step and -reps must be positive, and -max at least -from")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\n", rt.Description)
	if !rt.CUDA {
		c.note = " (fake runtime: not a GPU timing)"
	}
	if err := compare(&counting{Full: rt}, c, stdout, stderr); err != nil {
		return cmd.Fail(1, err)
	}
	return 0
}

// compare prints both measures to out, and a line on progress as each
// method starts.
func compare(rt *counting, c config, out, progress io.Writer) error {
	free, total, err := rt.MemGetInfo(0)
	if err != nil {
		return err
	}
	gran, err := rt.MemGetAllocationGranularity(0, true)
	if err != nil {
		return fmt.Errorf("CUDA virtual memory: %w", err)
	}
	fmt.Fprintf(out, "device 0: %s free of %s; allocation granularity %s\n\n", humanize.IBytes(free), humanize.IBytes(total), humanize.IBytes(gran))

	to, n := doublingTarget(c.from, c.max, free-min(free, c.margin))
	if n < 0 {
		return fmt.Errorf("growing from %s needs %s free with -margin %s; the device has %s", humanize.IBytes(c.from), humanize.IBytes(c.from+c.margin), humanize.IBytes(c.margin), humanize.IBytes(free))
	}
	clamped := ""
	if to < c.max {
		clamped = fmt.Sprintf(" (clamped from %s: realloc's last step holds %s)", humanize.IBytes(c.max), humanize.IBytes(to+to/2))
	}
	fmt.Fprintf(out, "grow by doubling, %s -> %s (%d doublings)%s, median of %d rounds%s\n", humanize.IBytes(c.from), humanize.IBytes(to), n, clamped, c.reps, c.note)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\ttime\tCUDA calls\tmoves\t")
	for _, name := range c.methods {
		fmt.Fprintf(progress, "vector: growing by doubling with %s, %d rounds\n", name, c.reps)
		g, err := median(c.reps, func() (growth, error) { return doublings[name](rt, c.from, to) })
		if err != nil {
			_ = tw.Flush()
			return fmt.Errorf("%s doubling: %w", name, err)
		}
		moves := "-"
		if name == "vmem" {
			moves = fmt.Sprint(g.moves)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\n", name, g.time.Round(time.Microsecond), g.calls, moves)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.noProbe {
		return nil
	}

	fmt.Fprintf(out, "\nlargest buffer reachable in %s steps\n", humanize.IBytes(c.step))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\treached\tof free\tsteps\tstopped because\t")
	for _, m := range []struct {
		name  string
		probe func(*counting, config) (reach, error)
	}{{"realloc", reallocReach}, {"vmem", vmemReach}} {
		fmt.Fprintf(progress, "vector: the largest buffer %s reaches\n", m.name)
		r, err := m.probe(rt, c)
		if err != nil {
			_ = tw.Flush()
			return fmt.Errorf("%s probe: %w", m.name, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%d\t%s\t\n", m.name, humanize.IBytes(r.reached), 100*float64(r.reached)/float64(r.free), r.steps, r.why)
	}
	return tw.Flush()
}

// doublingTarget is the largest from*2^n that is at most max and that
// realloc can reach without asking for more than avail: its last step holds
// the old half and the new whole at once. n is -1 when not even from fits.
func doublingTarget(from, max, avail uint64) (to uint64, n int) {
	if from > avail {
		return 0, -1
	}
	to = from
	for to*2 <= max && to*2 > to && to*2+to <= avail {
		to *= 2
		n++
	}
	return to, n
}

// median runs f reps times and returns the run of median time.
func median(reps int, f func() (growth, error)) (growth, error) {
	var runs []growth
	for range reps {
		g, err := f()
		if err != nil {
			return growth{}, err
		}
		runs = append(runs, g)
	}
	slices.SortFunc(runs, func(a, b growth) int { return cmp.Compare(a.time, b.time) })
	return runs[len(runs)/2], nil
}

// sizeFlag is a byte count given in human form: 256MiB, 32GiB, 1GB.
type sizeFlag uint64

func (s *sizeFlag) String() string { return humanize.IBytes(uint64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := humanize.ParseBytes(v)
	if err != nil {
		return errors.New("want a size such as 256MiB or 32GiB")
	}
	*s = sizeFlag(n)
	return nil
}

// about is what -h prints before the flags.
const about = `vector compares growing a device buffer with cudaMalloc (allocate, copy,
free: realloc) and with CUDA virtual memory (vmem.Vector: map more memory
after it, nothing copied): the time to grow by doubling up to -max, and the
largest buffer each reaches in -step steps, never asking for more than the
device has free. Timings on the fake runtime are not GPU timings; on the
fake, -max 256MiB -step 16MiB -probe 1GiB keeps a run quick.`
