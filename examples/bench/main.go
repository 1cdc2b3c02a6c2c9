// Command bench compares, in one run on one device, the cost per buffer of
// placing 10,000 buffers with cudapool against cudaMalloc and cudaMallocAsync
// (cold: the stream-ordered pool returns its memory at every synchronisation;
// warm: it keeps it), for the same sizes, and the device bytes each reserved.
//
//	go run ./examples/bench [-runtime=auto|cuda|fake] [-n 10000] [-reps 5]
//
// Each figure is the median over -reps rounds. Only the allocation calls are
// timed; freeing happens between rounds.
package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/cli"
	"github.com/cudapool/cudapool/pool"
)

func main() { cli.Main(run) }

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("bench", about, stderr)
	which := cmd.Runtime()
	n := cmd.Int("n", 10000, "buffers per round")
	reps := cmd.Int("reps", 5, "rounds per method; the median is reported")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if *n <= 0 || *reps <= 0 {
		return cmd.Fail(2, "-n and -reps must be positive")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	sizes := makeSizes(*n)
	var sum uint64
	for _, s := range sizes {
		sum += s
	}
	note := ""
	if !rt.CUDA {
		note = " (fake runtime: not a GPU timing)"
	}
	fmt.Fprintf(stdout, "runtime: %s\n%d buffers, 256 B to 64 KiB, %s in all; median of %d rounds%s\n\n",
		rt.Description, len(sizes), humanize.IBytes(sum), *reps, note)

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tper buffer\tround\tdevice bytes reserved\t")
	for i, m := range methods {
		// A round of cudaMalloc calls takes seconds on a GPU: say what runs.
		fmt.Fprintf(stderr, "bench: [%d/%d] %s, %d rounds\n", i+1, len(methods), m.name, *reps)
		r, err := m.run(rt, sizes, *reps)
		if err != nil {
			_ = tw.Flush()
			fmt.Fprintf(stderr, "bench: %s: %v\n", m.name, err)
			return 1
		}
		per := time.Duration(int64(r.median) / int64(len(sizes)))
		perStr := per.String()
		if per < time.Microsecond {
			perStr = fmt.Sprintf("%.1fns", float64(r.median.Nanoseconds())/float64(len(sizes)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", m.name, perStr, r.median.Round(time.Microsecond), humanize.IBytes(r.reserved))
	}
	_ = tw.Flush()
	return 0
}

// makeSizes returns the same n sizes every run.
func makeSizes(n int) []uint64 {
	r := rand.New(rand.NewPCG(2026, 11))
	sizes := make([]uint64, n)
	for i := range sizes {
		sizes[i] = 256 + r.Uint64N(64<<10-256)
	}
	return sizes
}

type result struct {
	median   time.Duration
	reserved uint64
}

type method struct {
	name string
	run  func(rt cudart.Full, sizes []uint64, reps int) (result, error)
}

var methods = []method{
	{"cudapool Want+Satisfy", benchPool},
	{"cudaMalloc", benchMalloc},
	{"cudaMallocAsync cold", func(rt cudart.Full, s []uint64, reps int) (result, error) { return benchAsync(rt, s, reps, false) }},
	{"cudaMallocAsync warm", func(rt cudart.Full, s []uint64, reps int) (result, error) { return benchAsync(rt, s, reps, true) }},
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// freeBytes is the device's free memory after the device is idle.
func freeBytes(rt cudart.Full) (uint64, error) {
	if err := rt.DeviceSynchronize(0); err != nil {
		return 0, err
	}
	free, _, err := rt.MemGetInfo(0)
	return free, err
}

func benchPool(rt cudart.Full, sizes []uint64, reps int) (res result, err error) {
	var need uint64
	for _, s := range sizes {
		a, _ := align.Up(s, align.CUDA)
		need += a
	}
	p, err := pool.New(rt, pool.WithDeviceBytes(need), pool.WithHostBytes(0))
	if err != nil {
		return result{}, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	times := make([]time.Duration, reps)
	for r := range times {
		start := time.Now()
		for _, s := range sizes {
			if _, err := p.WantDevice(s); err != nil {
				return result{}, err
			}
		}
		if err := p.Satisfy(); err != nil {
			return result{}, err
		}
		times[r] = time.Since(start)
		if err := p.ReleaseAll(); err != nil {
			return result{}, err
		}
	}
	return result{median: median(times), reserved: need}, nil
}

func benchMalloc(rt cudart.Full, sizes []uint64, reps int) (result, error) {
	times := make([]time.Duration, reps)
	ptrs := make([]cudart.DevicePtr, len(sizes))
	var reserved uint64
	for r := range times {
		before, err := freeBytes(rt)
		if err != nil {
			return result{}, err
		}
		start := time.Now()
		for i, s := range sizes {
			if ptrs[i], err = rt.Malloc(0, s); err != nil {
				return result{}, errors.Join(err, freeAll(rt, ptrs[:i]))
			}
		}
		times[r] = time.Since(start)
		after, err := freeBytes(rt)
		if err != nil {
			return result{}, errors.Join(err, freeAll(rt, ptrs))
		}
		reserved = before - after
		if err := freeAll(rt, ptrs); err != nil {
			return result{}, err
		}
	}
	return result{median: median(times), reserved: reserved}, nil
}

func freeAll(rt cudart.Full, ptrs []cudart.DevicePtr) error {
	var errs []error
	for _, p := range ptrs {
		if err := rt.Free(0, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// benchAsync times cudaMallocAsync on the default stream. Cold sets the
// default pool's release threshold to 0, so every round starts with an empty
// pool; warm keeps everything and times the rounds after a first one. The
// bytes reserved are the drop in free memory from before the first round to
// the end of the allocations.
func benchAsync(rt cudart.Full, sizes []uint64, reps int, warm bool) (res result, err error) {
	old, err := rt.MemPoolReleaseThreshold(0)
	if err != nil {
		return result{}, err
	}
	threshold := uint64(0)
	if warm {
		threshold = ^uint64(0)
	}
	if err := rt.SetMemPoolReleaseThreshold(0, threshold); err != nil {
		return result{}, err
	}
	defer func() {
		err = errors.Join(err, rt.SetMemPoolReleaseThreshold(0, 0), rt.DeviceSynchronize(0), rt.SetMemPoolReleaseThreshold(0, old))
	}()
	ptrs := make([]cudart.DevicePtr, len(sizes))
	// One baseline before any round: a warm pool's memory was reserved by
	// the warm-up round and is still held.
	before, err := freeBytes(rt)
	if err != nil {
		return result{}, err
	}
	round := func() (time.Duration, uint64, error) {
		start := time.Now()
		for i, s := range sizes {
			if ptrs[i], err = rt.MallocAsync(0, s, 0); err != nil {
				return 0, 0, errors.Join(err, freeAllAsync(rt, ptrs[:i]))
			}
		}
		d := time.Since(start)
		after, err := freeBytes(rt)
		if err != nil {
			return 0, 0, errors.Join(err, freeAllAsync(rt, ptrs))
		}
		var reserved uint64
		if before > after {
			reserved = before - after
		}
		return d, reserved, freeAllAsync(rt, ptrs)
	}
	if warm {
		if _, _, err := round(); err != nil {
			return result{}, err
		}
	}
	times := make([]time.Duration, reps)
	for r := range times {
		if times[r], res.reserved, err = round(); err != nil {
			return result{}, err
		}
	}
	res.median = median(times)
	return res, nil
}

func freeAllAsync(rt cudart.Full, ptrs []cudart.DevicePtr) error {
	var errs []error
	for _, p := range ptrs {
		if err := rt.FreeAsync(0, p, 0); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, rt.DeviceSynchronize(0))
	return errors.Join(errs...)
}

// about is what -h prints before the flags.
const about = `bench compares the cost per buffer of placing -n buffers (256 B to 64 KiB)
with a cudapool pool against cudaMalloc and cudaMallocAsync (cold and warm),
on one device in one run, and the device bytes each reserved; each figure is
the median of -reps rounds. Timings on the fake runtime are not GPU timings.`
