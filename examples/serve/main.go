// Command serve serves inference requests from one pre-planned pool of slots
// (pool.Slots) and load-tests it against two baselines, in one run.
//
// Each request runs a small model: its input staged through the slot's
// pinned host buffer, a chain of PTX kernels over the slot's device
// buffers, reading weights shared by every slot, on the slot's own stream
// (one CUDA graph per slot and profile), and its output copied back. A
// bounded load generator (a fixed number of requests from a fixed number of
// concurrent clients) measures throughput and p50/p99 latency for 1, 2, 4
// and 8 slots, for one pool behind a mutex, and for per-request
// cudaMallocAsync/cudaFreeAsync on a stream per client; in process (the
// pool's own cost) and through an HTTP server on the loopback interface.
// Every output is checked against the CPU.
//
//	go run ./examples/serve [-runtime=auto|cuda|fake] [-requests 20000] [-clients 8] [-via both]
package main

import (
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

const usage = `serve: concurrent inference requests from pool.Slots, load-tested.

It runs a small model (a chain of kernels over float32 rows, weights shared
by all requests) per request in a slot, and measures requests/s and p50/p99
latency for several slot counts and two baselines (one pool behind a mutex;
cudaMallocAsync/cudaFreeAsync per request on a stream per client), in
process and through a loopback HTTP server. Every output is checked against
the CPU. It stops by itself; progress goes to stderr, the tables to stdout.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags ask for.
type config struct {
	runtime          string
	requests         int
	clients          int
	n                uint32
	layers           int
	mix, slots       []int
	graphs           bool
	inProcess, httpd bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var c config
	fs.StringVar(&c.runtime, "runtime", "auto", "CUDA runtime to use: "+cudarttest.Modes)
	fs.IntVar(&c.requests, "requests", 20000, "requests measured a configuration (200 on the fake unless given)")
	fs.IntVar(&c.clients, "clients", 8, "concurrent clients of the load generator")
	n := fs.Uint("n", 65536, "float32 elements a batch row (4096 on the fake unless given)")
	fs.IntVar(&c.layers, "layers", 8, "kernels a request runs")
	mix := fs.String("mix", "1", "batch sizes of the requests in turn, comma-separated; each is a shape profile")
	slots := fs.String("slots", "1,2,4,8", "slot counts to measure, comma-separated")
	fs.BoolVar(&c.graphs, "graph", true, "one CUDA graph launch a request (slots and mutex pool); false: a launch a kernel")
	via := fs.String("via", "both", "inproc (calls the server code directly: the pool's cost), http (through the loopback HTTP server) or both")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var err error
	c.mix, err = positives(*mix, 1024)
	if err == nil {
		c.slots, err = positives(*slots, 1024)
	}
	c.inProcess, c.httpd = *via == "inproc" || *via == "both", *via == "http" || *via == "both"
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 2
	case !c.inProcess && !c.httpd:
		fmt.Fprintf(stderr, "serve: -via %q: want inproc, http or both\n", *via)
		return 2
	case c.requests < 1 || c.clients < 1 || c.clients > 1024 || c.layers < 1 || c.layers > 1024 || *n == 0 || *n > 1<<24:
		fmt.Fprintln(stderr, "serve: -requests and -clients (at most 1024) and -layers (at most 1024) must be at least 1, -n 1 to 16777216")
		return 2
	}
	c.n = uint32(*n)
	rt, err := cudarttest.OpenMode(c.runtime)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	defer rt.Close()
	if !rt.CUDA {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if !given["requests"] {
			c.requests = 200
		}
		if !given["n"] {
			c.n = 4096
		}
	}
	fmt.Fprintf(stdout, "runtime: %s\n", rt.Description)
	if err := measure(rt, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	return 0
}

// positives parses a comma-separated list of integers 1 to most.
func positives(s string, most int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > most {
			return nil, fmt.Errorf("%q: want comma-separated integers 1 to %d", s, most)
		}
		out = append(out, v)
	}
	return out, nil
}

// current is the Slots being measured, published at /debug/vars.
var current atomic.Pointer[pool.Slots]

var publish sync.Once

// measure runs every configuration in process and through HTTP, as asked,
// and prints a table for each.
func measure(rt *cudarttest.Runtime, c config, stdout, stderr io.Writer) (err error) {
	publish.Do(func() {
		// A server with one Slots publishes them with
		// expvar.Publish("slots", slots.Var()); this one swaps them.
		expvar.Publish("slots", expvar.Func(func() any {
			if s := current.Load(); s != nil {
				return s.Var()
			}
			return nil
		}))
	})
	m, err := newModel(rt.Full, c.n, c.layers)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.close()) }()
	w := newWorkload(m, c.mix)
	kernels := "one CUDA graph launch a request (slots, mutex pool), kernel by kernel for cudaMallocAsync"
	if !c.graphs {
		kernels = "kernel by kernel"
	}
	fmt.Fprintf(stdout, "model: %d kernels over %d float32 a row (%s in, %s out), batches %v, weights shared\n",
		c.layers, c.n, humanize.IBytes(m.rowBytes()), humanize.IBytes(m.rowBytes()), c.mix)
	fmt.Fprintf(stdout, "load: %d requests a configuration from %d concurrent clients, after %d unmeasured; %s; every output checked against the CPU\n",
		c.requests, c.clients, warmup(c), kernels)
	if c.inProcess {
		if err := table(m, w, c, "in process (the server's code called directly: the pool's cost)", nil, true, stdout, stderr); err != nil {
			return err
		}
	}
	if c.httpd {
		if err := table(m, w, c, "through HTTP (net/http on 127.0.0.1, a connection per client)", httpVia, !c.inProcess, stdout, stderr); err != nil {
			return err
		}
	}
	if !rt.CUDA {
		fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
	}
	return nil
}

// warmup is the requests sent before each measurement.
func warmup(c config) int { return min(c.requests, 4*c.clients) }

// via sends the load to a backend: in process when nil.
type via func(b backend, m *model, w *workload, c config, run func(do func(c, i int) error) (result, error)) (result, error)

// httpVia serves b on the loopback interface for the time of one
// measurement, with the slots' Stats at /debug/vars.
func httpVia(b backend, m *model, w *workload, c config, run func(do func(c, i int) error) (result, error)) (result, error) {
	url, stop, err := listenLoopback(handler(b, int(m.rowBytes()), expvar.Handler()))
	if err != nil {
		return result{}, err
	}
	r, err := run(overHTTP(url, c.clients, w))
	return r, errors.Join(err, stop())
}

// table measures each configuration and prints its line, and the memory
// each took when withMemory is set.
func table(m *model, w *workload, c config, title string, through via, withMemory bool, stdout, stderr io.Writer) error {
	type row struct {
		result
		memory string
	}
	var rows []row
	configs := []string{}
	for _, n := range c.slots {
		configs = append(configs, fmt.Sprintf("slots=%d", n))
	}
	configs = append(configs, "mutex pool", "cudaMallocAsync")
	for i, name := range configs {
		fmt.Fprintf(stderr, "serve: %s, %s: %d requests...\n", strings.SplitN(title, " (", 2)[0], name, c.requests)
		b, err := newBackend(m, c, i)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if sb, ok := b.(*slotsBackend); ok {
			current.Store(sb.s)
		}
		r, err := measureOne(b, m, w, c, through)
		current.Store(nil)
		mem := b.memory()
		if err = errors.Join(err, b.close()); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.name = name
		rows = append(rows, row{r, mem})
	}
	fmt.Fprintf(stdout, "\n%s:\n", title)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\trequests/s\tp50\tp99\tvs slots="+strconv.Itoa(c.slots[0])+"\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%v\t%v\t%.2fx\t\n", r.name, r.perSecond, round(r.p50), round(r.p99), r.perSecond/rows[0].perSecond)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	last, async := rows[len(c.slots)-1], rows[len(rows)-1]
	fmt.Fprintf(stdout, "%s vs cudaMallocAsync at %d clients: %.2fx\n", last.name, c.clients, last.perSecond/async.perSecond)
	if !withMemory {
		return nil
	}
	fmt.Fprintln(stdout, "memory:")
	for _, r := range rows {
		fmt.Fprintf(stdout, "  %-16s %s\n", r.name, r.memory)
	}
	return nil
}

// newBackend is configuration i: the slot counts, then the mutex pool,
// then cudaMallocAsync.
func newBackend(m *model, c config, i int) (backend, error) {
	switch {
	case i < len(c.slots):
		return newSlotsBackend(m, c.slots[i], c.mix, c.graphs)
	case i == len(c.slots):
		return newMutexBackend(m, c.mix, c.graphs)
	}
	return newAsyncBackend(m, c.clients, c.mix)
}

// measureOne warms b up and measures it.
func measureOne(b backend, m *model, w *workload, c config, through via) (result, error) {
	run := func(do func(c, i int) error) (result, error) {
		if _, err := load(c.clients, warmup(c), do); err != nil {
			return result{}, fmt.Errorf("warm-up: %w", err)
		}
		return load(c.clients, c.requests, do)
	}
	if through == nil {
		return run(inProcess(b, w))
	}
	return through(b, m, w, c, run)
}

// round keeps three significant digits or so of a latency.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}
