package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/nccl"
)

// smallSizes are the all-reduces timed eager and from a graph.
var smallSizes = []uint64{4 << 10, 64 << 10, 1 << 20}

// The communicators of the bench, as its tables name them: cref/allreduce.c
// -nonblocking names its own as nonBlockingComms, and without it its
// blocking ones (ncclCommInitAll), which launch as blockingComms do.
const (
	nonBlockingComms = "non-blocking (ncclCommInitRankConfig, blocking = 0)"
	blockingComms    = "blocking (nccl.WithInlineLaunch: ncclCommSplit, blocking = 1, of non-blocking ones)"
)

// benchRank is one device's buffers and stream.
type benchRank struct {
	dev       int
	send, rcv cudart.DevicePtr
	st        cudart.Stream
}

// benchAllReduce prints the all-reduce tables of cref/allreduce.c: the
// same calls (a communicator a visible device, one process; float32 sum,
// out of place), timed the same way, with each kind of package nccl's
// communicators in turn (non-blocking, then blocking), and their eager
// times side by side.
func benchAllReduce(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
	lib, err := nccl.Open(rt)
	if err != nil {
		return err
	}
	n, err := rt.DeviceCount()
	if err != nil {
		return err
	}
	ranks := make([]benchRank, n)
	devices := make([]int, n)
	defer func() {
		for _, r := range ranks {
			for _, p := range []cudart.DevicePtr{r.send, r.rcv} {
				if p != 0 {
					err = errors.Join(err, rt.Free(r.dev, p))
				}
			}
			if r.st != 0 {
				err = errors.Join(err, rt.StreamDestroy(r.dev, r.st))
			}
		}
	}()
	for d := range n {
		r := &ranks[d]
		r.dev, devices[d] = d, d
		if r.send, err = rt.Malloc(d, c.benchMax); err != nil {
			return err
		}
		if r.rcv, err = rt.Malloc(d, c.benchMax); err != nil {
			return err
		}
		if err = rt.Memset(d, r.send, 0, c.benchMax); err != nil {
			return err
		}
		if r.st, err = rt.StreamCreate(d); err != nil {
			return err
		}
	}
	kinds := []struct {
		name string
		opts []nccl.CommOption
	}{
		{nonBlockingComms, nil},
		{blockingComms, []nccl.CommOption{nccl.WithInlineLaunch()}},
	}
	eager := make([][]time.Duration, len(kinds))
	for k, kind := range kinds {
		if k > 0 {
			fmt.Fprintln(stdout)
		}
		comms, err := lib.InitAll(devices, append(kind.opts, nccl.WithTimeout(c.initTimeout()))...)
		if err != nil {
			return err
		}
		eager[k], err = benchComms(rt, c, lib, ranks, comms, kind.name, stdout, stderr)
		if err := errors.Join(err, destroyAll([][]*nccl.Comm{comms})); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "\neager all-reduces, a time a call, each kind of communicator")
	fmt.Fprintf(stdout, "%12s  %15s  %11s  %14s\n", "size_B", "non-blocking_us", "blocking_us", "blocking/non-b")
	for i, size := 0, uint64(1<<20); size <= c.benchMax; i, size = i+1, size*2 {
		fmt.Fprintf(stdout, "%12d  %15.2f  %11.2f  %14.2f\n", size, us(eager[0][i]), us(eager[1][i]), eager[1][i].Seconds()/eager[0][i].Seconds())
	}
	return nil
}

// benchComms prints cref/allreduce.c's two tables for comms, a
// communicator a rank of ranks, named kind, and returns the eager time of
// each size of the first, in its order.
func benchComms(rt *choose.Runtime, c config, lib *nccl.Library, ranks []benchRank, comms []*nccl.Comm, kind string, stdout, stderr io.Writer) ([]time.Duration, error) {
	n := len(ranks)
	ops := make([]nccl.Op, n)
	group := func(bytes uint64) error {
		for i, r := range ranks {
			ops[i] = comms[i].AllReduceOp(r.send, r.rcv, bytes/4, nccl.Float32, nccl.Sum, r.st)
		}
		return lib.Group(ops...)
	}
	sync := func() error {
		for _, r := range ranks {
			if err := rt.StreamSynchronize(r.dev, r.st); err != nil {
				return err
			}
		}
		return nil
	}
	// timed is the time of one call: warm-up calls, then -iters between
	// two readings of the clock, all streams synchronised.
	timed := func(call func() error, calls int) (time.Duration, error) {
		for range c.warmup {
			if err := call(); err != nil {
				return 0, err
			}
		}
		if err := sync(); err != nil {
			return 0, err
		}
		start := time.Now()
		for range c.iters {
			if err := call(); err != nil {
				return 0, err
			}
		}
		if err := sync(); err != nil {
			return 0, err
		}
		return time.Since(start) / time.Duration(c.iters*calls), nil
	}
	fmt.Fprintln(stdout, "communicators: "+kind)
	fmt.Fprintf(stdout, "allreduce: %d devices, float32 sum, out of place, %d warm-up and %d timed calls a size; busbw = algbw * 2(n-1)/n\n", n, c.warmup, c.iters)
	// The widths are cref/allreduce.c's: the tables are the same.
	fmt.Fprintf(stdout, "%12s  %10s  %9s  %9s  %9s\n", "size_B", "count", "time_us", "algbw_GBs", "busbw_GBs")
	var eager []time.Duration
	for size := uint64(1 << 20); size <= c.benchMax; size *= 2 {
		fmt.Fprintf(stderr, "tp: all-reduce of %s, %s communicators...\n", mib(size), strings.Fields(kind)[0])
		d, err := timed(func() error { return group(size) }, 1)
		if err != nil {
			return nil, fmt.Errorf("all-reduce of %d B: %w", size, err)
		}
		eager = append(eager, d)
		algbw := float64(size) / d.Seconds() / 1e9
		fmt.Fprintf(stdout, "%12d  %10d  %9.2f  %9.2f  %9.2f\n", size, size/4, us(d), algbw, algbw*2*float64(n-1)/float64(n))
	}
	// The fake runs a launched graph's work at once, as one piece of its
	// stream's: a graph's second collective would wait for ranks whose
	// graphs are still running. It captures one a graph.
	perGraph := c.iters
	if !rt.CUDA {
		perGraph = 1
	}
	fmt.Fprintf(stdout, "\nsmall all-reduces: eager against one CUDA graph of %d captured, a time a call\n", perGraph)
	fmt.Fprintf(stdout, "%8s  %8s  %8s  %11s\n", "size_B", "eager_us", "graph_us", "graph/eager")
	on := make([]capture.Stream, len(ranks))
	for i, r := range ranks {
		on[i] = capture.Stream{Device: r.dev, Stream: r.st}
	}
	for _, size := range smallSizes {
		if size > c.benchMax {
			continue
		}
		e, err := timed(func() error { return group(size) }, 1)
		if err != nil {
			return nil, err
		}
		execs, _, err := capture.Instantiate(rt, on, func() error {
			for range perGraph {
				if err := group(size); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("capturing all-reduces of %d B: %w", size, err)
		}
		launch := func() error {
			for i, r := range ranks {
				if err := rt.GraphLaunch(r.dev, execs[i], r.st); err != nil {
					return err
				}
			}
			return nil
		}
		graph, err := timed(launch, perGraph)
		for i, r := range ranks {
			err = errors.Join(err, rt.GraphExecDestroy(r.dev, execs[i]))
		}
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "%8d  %8.2f  %8.2f  %11.2f\n", size, us(e), us(graph), graph.Seconds()/e.Seconds())
	}
	return eager, nil
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
