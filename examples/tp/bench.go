package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/nccl"
)

// smallSizes are the all-reduces timed eager and from a graph.
var smallSizes = []uint64{4 << 10, 64 << 10, 1 << 20}

// nonBlockingComms names package nccl's communicators in the bench's first
// line, as cref/allreduce.c -nonblocking names its own.
const nonBlockingComms = "non-blocking (ncclCommInitRankConfig, blocking = 0)"

// benchRank is one device's buffers and stream.
type benchRank struct {
	dev       int
	send, rcv cudart.DevicePtr
	st        cudart.Stream
	comm      *nccl.Comm
}

// benchAllReduce prints the all-reduce table of cref/allreduce.c: the
// same calls (a communicator a visible device, one process; float32 sum,
// out of place), timed the same way.
func benchAllReduce(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
	lib, err := nccl.Open(rt)
	if err != nil {
		return err
	}
	n, err := rt.DeviceCount()
	if err != nil {
		return err
	}
	devices := make([]int, n)
	for i := range devices {
		devices[i] = i
	}
	comms, err := lib.InitAll(devices, nccl.WithTimeout(c.initTimeout()))
	if err != nil {
		return err
	}
	ranks := make([]benchRank, n)
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
		err = errors.Join(err, destroyAll([][]*nccl.Comm{comms}))
	}()
	for i, d := range devices {
		r := &ranks[i]
		r.dev, r.comm = d, comms[i]
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
	group := func(bytes uint64) error {
		ops := make([]nccl.Op, n)
		for i, r := range ranks {
			ops[i] = r.comm.AllReduceOp(r.send, r.rcv, bytes/4, nccl.Float32, nccl.Sum, r.st)
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
	fmt.Fprintln(stdout, "communicators: "+nonBlockingComms)
	fmt.Fprintf(stdout, "allreduce: %d devices, float32 sum, out of place, %d warm-up and %d timed calls a size; busbw = algbw * 2(n-1)/n\n", n, c.warmup, c.iters)
	// The widths are cref/allreduce.c's: the tables are the same.
	fmt.Fprintf(stdout, "%12s  %10s  %9s  %9s  %9s\n", "size_B", "count", "time_us", "algbw_GBs", "busbw_GBs")
	for size := uint64(1 << 20); size <= c.benchMax; size *= 2 {
		fmt.Fprintf(stderr, "tp: all-reduce of %s...\n", mib(size))
		d, err := timed(func() error { return group(size) }, 1)
		if err != nil {
			return fmt.Errorf("all-reduce of %d B: %w", size, err)
		}
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
	for _, size := range smallSizes {
		if size > c.benchMax {
			continue
		}
		eager, err := timed(func() error { return group(size) }, 1)
		if err != nil {
			return err
		}
		on := make([]capture.Stream, len(ranks))
		for i, r := range ranks {
			on[i] = capture.Stream{Device: r.dev, Stream: r.st}
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
			return fmt.Errorf("capturing all-reduces of %d B: %w", size, err)
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
			return err
		}
		fmt.Fprintf(stdout, "%8d  %8.2f  %8.2f  %11.2f\n", size, us(eager), us(graph), graph.Seconds()/eager.Seconds())
	}
	return nil
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
