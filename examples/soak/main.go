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
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

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
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", about); fs.PrintDefaults() }
	which := fs.String("runtime", "", "CUDA runtime to use: "+choose.Modes)
	var c config
	fs.IntVar(&c.cycles, "cycles", 0, "ReleaseAll/Satisfy cycles (default 100000 on CUDA, 20000 on the fake)")
	fs.IntVar(&c.buffers, "buffers", 64, "requests per cycle, of mixed sizes, a quarter of them host buffers")
	fs.IntVar(&c.samples, "samples", 10, "points at which free memory and RSS are sampled")
	fs.IntVar(&c.checkEvery, "check-every", 1000, "cycles between host -> device -> host round trips")
	fs.BoolVar(&c.growable, "growable", false, "use a growable device arena (CUDA virtual memory)")
	fs.BoolVar(&c.trim, "trim", false, "with -growable: give the arena's memory back at every ReleaseAll")
	deviceMiB := fs.Uint64("device-mib", 256, "device arena size (maximum, with -growable), MiB")
	hostMiB := fs.Uint64("host-mib", 64, "pinned host arena size, MiB")
	tolMiB := fs.Uint64("free-tolerance-mib", 2, "largest accepted change of free device memory, MiB")
	rssMiB := fs.Uint64("rss-limit-mib", 16, "largest accepted RSS growth after the first sample, MiB")
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	c.deviceBytes, c.hostBytes = *deviceMiB<<20, *hostMiB<<20
	c.freeTolerance, c.rssLimit = *tolMiB<<20, *rssMiB<<20
	if c.cycles < 0 || c.buffers < 2 || c.samples < 2 || c.checkEvery < 1 || c.deviceBytes == 0 || c.hostBytes == 0 {
		fmt.Fprintln(stderr, "soak: -cycles (0: the default) and -check-every must be at least 1, -buffers and -samples at least 2, the arenas not empty")
		return 2
	}
	if c.trim && !c.growable {
		fmt.Fprintln(stderr, "soak: -trim needs -growable")
		return 2
	}
	rt, err := choose.Open(*which)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
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
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
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

// exhaust asks for more than the device has, and for more than an arena
// holds: each must fail with a clear error and leave nothing behind.
func exhaust(rt cudart.Full, c config, w io.Writer) error {
	fmt.Fprintln(w, "exhaustion")
	free0, total, err := freeMemory(rt)
	if err != nil {
		return err
	}
	ask := free0 + 1<<30
	fmt.Fprintf(w, "  device: %s free of %s; asking pool.New for a %s arena\n", humanize.IBytes(free0), humanize.IBytes(total), humanize.IBytes(ask))
	p, err := pool.New(rt, pool.WithDeviceBytes(ask), pool.WithHostBytes(0))
	if err == nil {
		return errors.Join(fmt.Errorf("pool.New reserved %s with %s free", humanize.IBytes(ask), humanize.IBytes(free0)), p.Close())
	}
	fmt.Fprintf(w, "  pool.New: %v\n", err)
	free1, _, ferr := freeMemory(rt)
	if ferr != nil {
		return ferr
	}
	if err := unchanged(w, free0, free1, c.freeTolerance); err != nil {
		return err
	}

	if c.growable {
		// Address space is not memory: the reservation succeeds and the
		// growth that would map more than is free fails.
		p, err := pool.New(rt, pool.WithGrowableDevice(ask), pool.WithHostBytes(0))
		if err != nil {
			return fmt.Errorf("reserve %s of address space: %w", humanize.IBytes(ask), err)
		}
		big := free1 + 512<<20
		if _, err := p.WantDevice(big, pool.Name("larger-than-free")); err != nil {
			return errors.Join(err, p.Close())
		}
		err = p.Satisfy()
		if err == nil {
			return errors.Join(fmt.Errorf("mapped %s with %s free", humanize.IBytes(big), humanize.IBytes(free1)), p.Close())
		}
		fmt.Fprintf(w, "  growable arena of %s, Satisfy of %s: %v\n", humanize.IBytes(ask), humanize.IBytes(big), err)
		if err := p.Close(); err != nil {
			return err
		}
		free2, _, err := freeMemory(rt)
		if err != nil {
			return err
		}
		if err := unchanged(w, free1, free2, c.freeTolerance); err != nil {
			return err
		}
	}

	const arena = 64 << 20
	p, err = pool.New(rt, pool.WithDeviceBytes(arena), pool.WithHostBytes(0))
	if err != nil {
		return err
	}
	for _, name := range []string{"weights", "kv-cache"} {
		if _, err := p.WantDevice(40<<20, pool.Name(name)); err != nil {
			return errors.Join(err, p.Close())
		}
	}
	err = p.Satisfy()
	var ex *pool.ExhaustedError
	if !errors.As(err, &ex) {
		return errors.Join(fmt.Errorf("queued 80 MiB in a 64 MiB arena: Satisfy returned %v, want a *pool.ExhaustedError", err), p.Close())
	}
	fmt.Fprintf(w, "  64 MiB arena, two 40 MiB requests queued, Satisfy: %v\n", err)
	if err := p.Close(); err != nil {
		return err
	}
	free3, _, err := freeMemory(rt)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	return unchanged(io.Discard, free0, free3, c.freeTolerance)
}

// request is one buffer of a cycle.
type request struct {
	host        bool
	size        uint64
	first, last int // a lifetime when last > 0
}

// requests returns n requests of mixed sizes, the same every run: a quarter
// host buffers of 256 B to 64 KiB, the rest device buffers of 256 B to
// 1 MiB, a third of those activations with lifetimes, each alive from the
// step that writes it to the one that reads it, as in a layer-by-layer
// pipeline. (Lifetimes drawn at random instead make the planner search for
// milliseconds at every Satisfy, which would make the soak a benchmark of
// the planner.)
func requests(n int) []request {
	r := rand.New(rand.NewPCG(6, 2026))
	out := make([]request, n)
	step := 0
	for i := range out {
		q := &out[i]
		switch {
		case i%4 == 0:
			q.host, q.size = true, 256+r.Uint64N(64<<10)
		default:
			q.size = 256 + r.Uint64N(1<<20)
			if i%3 == 0 {
				q.first, q.last = step, step+1
				step++
			}
		}
	}
	// The round trip needs one host and one whole device buffer.
	out[0].host = true
	out[1] = request{size: out[1].size}
	return out
}

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

// cycle runs the cycles and returns the samples.
func cycle(rt cudart.Full, c config, w, progress io.Writer) (samples []sample, err error) {
	opts := []pool.Option{pool.WithHostBytes(c.hostBytes)}
	kind := "fixed"
	switch {
	case c.growable && c.trim:
		opts, kind = append(opts, pool.WithGrowableDevice(c.deviceBytes), pool.WithTrimOnRelease()), "growable, trimmed at every ReleaseAll,"
	case c.growable:
		opts, kind = append(opts, pool.WithGrowableDevice(c.deviceBytes)), "growable"
	default:
		opts = append(opts, pool.WithDeviceBytes(c.deviceBytes))
	}
	p, err := pool.New(rt, opts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	reqs := requests(c.buffers)
	fmt.Fprintf(w, "cycles: %d x %d buffers on a %s %s device arena and a %s host arena (pinned: %s)\n",
		c.cycles, len(reqs), kind, humanize.IBytes(c.deviceBytes), humanize.IBytes(c.hostBytes), p.Stats().HostPinning)

	points := samplePoints(c.cycles, c.samples)
	bufs := make([]*pool.Buffer, len(reqs))
	var back []byte
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cycle\tfree device\tRSS\telapsed%s\t\n", c.note)
	start := time.Now()
	for i := 0; i < c.cycles; i++ {
		for j, q := range reqs {
			var opts []pool.WantOption
			if q.last > 0 {
				opts = append(opts, pool.Live(q.first, q.last))
			}
			want := p.WantDevice
			if q.host {
				want = p.WantHost
			}
			if bufs[j], err = want(q.size, opts...); err != nil {
				return nil, fmt.Errorf("cycle %d, request %d: %w", i, j, err)
			}
		}
		if err := p.Satisfy(); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if i%c.checkEvery == 0 {
			if back, err = roundTrip(rt, p, bufs[0], bufs[1], byte(i), back); err != nil {
				return nil, fmt.Errorf("cycle %d: %w", i, err)
			}
		}
		if err := p.ReleaseAll(); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if len(samples) < len(points) && i == points[len(samples)] {
			s, err := take(rt, i)
			if err != nil {
				return nil, err
			}
			samples = append(samples, s)
			elapsed := time.Since(start).Round(time.Millisecond)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\n", i, humanize.IBytes(s.free), rssString(s.rss), elapsed)
			fmt.Fprintf(progress, "soak: cycle %d of %d: %s device memory free, RSS %s, %s elapsed%s\n",
				i+1, c.cycles, humanize.IBytes(s.free), rssString(s.rss), elapsed, c.note)
		}
	}
	_ = tw.Flush()
	return samples, nil
}

// roundTrip writes a pattern into the host buffer, copies it to the device
// buffer and back into Go memory, and compares.
func roundTrip(rt cudart.Runtime, p *pool.Pool, host, dev *pool.Buffer, seed byte, back []byte) ([]byte, error) {
	hb, err := host.Bytes()
	if err != nil {
		return back, err
	}
	ptr, err := dev.Ptr()
	if err != nil {
		return back, err
	}
	n := min(uint64(len(hb)), dev.Size())
	for i := range hb[:n] {
		hb[i] = seed ^ byte(i*7)
	}
	if uint64(cap(back)) < n {
		back = make([]byte, n)
	}
	back = back[:n]
	if err := rt.Memcpy(p.Device(), cudart.DeviceMem(ptr, n), cudart.HostMem(hb[:n]), cudart.HostToDevice); err != nil {
		return back, err
	}
	if err := rt.Memcpy(p.Device(), cudart.HostMem(back), cudart.DeviceMem(ptr, n), cudart.DeviceToHost); err != nil {
		return back, err
	}
	if !bytes.Equal(back, hb[:n]) {
		return back, fmt.Errorf("%d bytes host -> device -> host came back different", n)
	}
	return back, nil
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
