// Command serve serves inference requests from one pre-planned pool of slots
// (pool.Slots) and load-tests it against three baselines, in one run.
//
// Each request runs a small model: its input staged through the slot's
// pinned host buffer, a chain of PTX kernels over the slot's device
// buffers, reading weights shared by every slot, on the slot's own stream,
// and its output copied back. A bounded load generator (a fixed number of
// requests from a fixed number of concurrent clients) measures throughput
// and the p50/p99 of the wait for a slot and of the service apart, for 1, 2,
// 4 and 8 slots, for one pool behind a mutex, for each client with its own
// buffers and stream and no pool (the upper bound), and for per-request
// cudaMallocAsync/cudaFreeAsync on a stream per client; each launching one
// CUDA graph a request (for cudaMallocAsync, with the allocations as memory
// nodes) and kernel by kernel; in process (the pool's cost) and through an
// HTTP server on the loopback interface. Outputs are compared in full with the CPU's in
// untimed passes before and after each measurement; timed requests stage
// and check samples. Last, the hand-off alone: Acquire and Release by 8
// goroutines with nothing between, on 1 and 4 slots, against a buffered
// channel used as a semaphore.
//
//	go run ./examples/serve [-runtime=auto|cuda|fake] [-requests 20000] [-clients 8] [-launch both] [-via both]
package main

import (
	"errors"
	"expvar"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
	"github.com/cudapool/cudapool/examples/loadgen"
	"github.com/cudapool/cudapool/pool"
)

const about = `serve: concurrent inference requests from pool.Slots, load-tested.

It runs a small model (a chain of kernels over float32 rows, weights shared
by all requests) per request in a slot, and measures requests/s and the
p50/p99 of the wait for a slot and of the service apart, for several slot
counts and three baselines (one pool behind a mutex; each client with its
own buffers and stream and no pool, the upper bound; cudaMallocAsync and
cudaFreeAsync per request on a stream per client), launching one CUDA graph
a request or kernel by kernel, in process and through a loopback HTTP
server, and prints the ratios between them. Outputs are compared in full
with the CPU's in untimed passes; timed requests stage and check samples.
Then it times the hand-off alone (Acquire + Release by 8 goroutines, no
work) against a buffered channel used as a semaphore. It stops by itself; progress goes to stderr, the tables to stdout.`

func main() { cli.Main(run) }

// config is what the flags ask for.
type config struct {
	runtime          string
	requests         int
	clients          int
	n                uint32
	layers           int
	mix, slots       []int
	launches         []bool // graphs or not, in the order measured
	handoffs         int
	inProcess, httpd bool
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("serve", about, stderr)
	var c config
	cmd.RuntimeVar(&c.runtime)
	cmd.IntVar(&c.requests, "requests", 20000, "timed requests a configuration (100 on the fake unless given)")
	cli.Fake(cmd, "requests", &c.requests, 100)
	cmd.IntVar(&c.clients, "clients", 8, "concurrent clients of the load generator")
	n := cmd.Uint("n", 65536, "float32 elements a batch row (4096 on the fake unless given)")
	cli.Fake(cmd, "n", &c.n, 4096)
	cmd.IntVar(&c.layers, "layers", 8, "kernels a request runs")
	mix := cmd.String("mix", "1", "batch sizes of the requests in turn, comma-separated; each is a shape profile")
	slots := cmd.String("slots", "1,2,4,8", "slot counts to measure, comma-separated")
	launch := cmd.String("launch", "both", "graph (one CUDA graph launch a request), kernels (a launch a kernel) or both, each configuration in each")
	cmd.IntVar(&c.handoffs, "handoffs", 1_000_000, "Acquire + Release hand-offs a run of the hand-off measurement, in process (10000 on the fake unless given; 0: none)")
	cli.Fake(cmd, "handoffs", &c.handoffs, 10000)
	via := cmd.String("via", "both", "inproc (calls the server code directly: the pool's cost), http (through the loopback HTTP server) or both")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	var err error
	c.mix, err = cli.Positives(*mix, 1024, false)
	if err == nil {
		c.slots, err = cli.Positives(*slots, 1024, false)
	}
	c.inProcess, c.httpd = *via == "inproc" || *via == "both", *via == "http" || *via == "both"
	var launchErr error
	c.launches, launchErr = cli.Launches(*launch, "kernels")
	switch {
	case err != nil:
		return cmd.Fail(2, err)
	case !c.inProcess && !c.httpd:
		fmt.Fprintf(stderr, "serve: -via %q: want inproc, http or both\n", *via)
		return 2
	case launchErr != nil:
		return cmd.Fail(2, launchErr)
	case c.handoffs < 0:
		return cmd.Fail(2, "-handoffs must be 0 or more")
	case c.requests < 1 || c.clients < 1 || c.clients > 1024 || c.layers < 1 || c.layers > 1024 || *n == 0 || *n > 1<<24:
		return cmd.Fail(2, "-requests and -clients (at most 1024) and -layers (at most 1024) must be at least 1, -n 1 to 16777216")
	}
	c.n = uint32(*n)
	rt, err := choose.Open(c.runtime)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	return cmd.Run(rt, stdout, func() error { return measure(rt, c, stdout, stderr) })
}

// current is the Slots being measured, published at /debug/vars.
var current atomic.Pointer[pool.Slots]

var publish sync.Once

// measure runs every configuration in process and through HTTP, as asked,
// and prints a table for each launch mode and the ratios.
func measure(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
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
	m, err := newModel(rt, c.n, c.layers)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.close()) }()
	w := newWorkload(m, c.mix)
	fmt.Fprintf(stdout, "model: %d kernels over %d float32 a row (%s in, %s out), batches %v, weights shared\n",
		c.layers, c.n, humanize.IBytes(m.rowBytes()), humanize.IBytes(m.rowBytes()), c.mix)
	fmt.Fprintf(stdout, "load: %d timed requests a configuration from %d concurrent clients; before and after them %d untimed requests, every output compared in full with the CPU's\n",
		c.requests, c.clients, checked(c))
	if c.inProcess {
		fmt.Fprintf(stdout, "in process, timed requests stage and check %d elements each (the kernels are elementwise)\n", samples)
	}
	if c.httpd {
		fmt.Fprintf(stdout, "through HTTP, the whole batch travels, is staged and comes back (the server's copies), and the client checks %d elements\n", samples)
	}
	fmt.Fprintln(stdout, "wait: for a slot (slots) or the lock (mutex pool); the other baselines share nothing to wait for. service: the rest of the latency")
	vias := []struct {
		on    bool
		title string
		via   via
	}{
		{c.inProcess, "in process (the server's code called directly: the pool's cost)", nil},
		{c.httpd, "through HTTP (net/http on 127.0.0.1, a connection per client)", httpVia},
	}
	withMemory := true
	for _, v := range vias {
		if !v.on {
			continue
		}
		if err := tables(m, w, c, v.title, v.via, withMemory, stdout, stderr); err != nil {
			return err
		}
		withMemory = false
	}
	if c.inProcess && c.handoffs > 0 {
		if err := handoffs(rt, c.handoffs, stdout, stderr); err != nil {
			return fmt.Errorf("hand-off: %w", err)
		}
	}
	if !rt.CUDA {
		fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
	}
	return nil
}

// checked is the requests of each untimed check pass.
func checked(c config) int { return max(4*c.clients, variants*len(c.mix)) }

// via sends the load to a backend: in process when nil. run measures
// with full for the check passes and sampled for the timed requests.
type via func(b backend, m *model, w *workload, c config, run func(full, sampled func(c, i int) (time.Duration, error)) (loadgen.Result, error)) (loadgen.Result, error)

// httpVia serves b on the loopback interface for the time of one
// measurement, with the slots' Stats at /debug/vars.
func httpVia(b backend, m *model, w *workload, c config, run func(full, sampled func(c, i int) (time.Duration, error)) (loadgen.Result, error)) (loadgen.Result, error) {
	url, stop, err := listenLoopback(handler(b, int(m.rowBytes()), expvar.Handler()))
	if err != nil {
		return loadgen.Result{}, err
	}
	r, err := run(overHTTP(url, c.clients, w, true), overHTTP(url, c.clients, w, false))
	return r, errors.Join(err, stop())
}

// configuration is one backend to measure.
type configuration struct {
	name   string
	graphs bool
	make   func() (backend, error)
}

// configurations are the slot counts, then the baselines, launching as
// graphs says.
func configurations(m *model, c config, graphs bool) []configuration {
	var out []configuration
	for _, n := range c.slots {
		out = append(out, configuration{fmt.Sprintf("slots=%d", n), graphs, func() (backend, error) { return newSlotsBackend(m, n, c.mix, graphs) }})
	}
	out = append(out,
		configuration{mutexName, graphs, func() (backend, error) { return newMutexBackend(m, c.mix, graphs) }},
		configuration{perClientName, graphs, func() (backend, error) { return newPerClientBackend(m, c.clients, c.mix, graphs) }},
		configuration{asyncName, graphs, func() (backend, error) { return newAsyncBackend(m, c.clients, c.mix, graphs) }})
	return out
}

// The baselines' names in the tables.
const (
	mutexName     = "mutex pool"
	perClientName = "per client"
	asyncName     = "cudaMallocAsync"
)

// measureOne measures cf: a check pass, the timed requests, a check pass.
func measureOne(cf configuration, m *model, w *workload, c config, through via) (r loadgen.Result, memory string, err error) {
	b, err := cf.make()
	if err != nil {
		return loadgen.Result{}, "", err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	if sb, ok := b.(*slotsBackend); ok {
		current.Store(sb.s)
		defer current.Store(nil)
	}
	run := func(full, sampled func(c, i int) (time.Duration, error)) (loadgen.Result, error) {
		if _, err := loadgen.Run(c.clients, checked(c), full); err != nil {
			return loadgen.Result{}, fmt.Errorf("check before: %w", err)
		}
		r, err := loadgen.Run(c.clients, c.requests, sampled)
		if err != nil {
			return loadgen.Result{}, err
		}
		if _, err := loadgen.Run(c.clients, checked(c), full); err != nil {
			return loadgen.Result{}, fmt.Errorf("check after: %w", err)
		}
		return r, nil
	}
	if through == nil {
		r, err = run(inProcess(b, w, c.clients, true), inProcess(b, w, c.clients, false))
	} else {
		r, err = through(b, m, w, c, run)
	}
	r.Name = cf.name
	return r, b.memory(), err
}
