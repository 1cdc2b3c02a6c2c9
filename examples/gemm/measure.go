package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/pool"
)

// workspace is the cuBLAS workspace a handle is given: what cuBLAS takes for
// itself on Hopper.
const workspace = 32 << 20

// timing is how a shape is timed.
type timing struct {
	reps, trials, warmup int
	graph                bool // the reps GEMMs captured in a CUDA graph, launched once a trial
}

// launchName is how the trials launch their GEMMs, as the tables say.
func (tm timing) launchName() string {
	if tm.graph {
		return "graph"
	}
	return "stream"
}

// result is one shape's timing: medians over the trials.
type result struct {
	shape
	timing
	ms, minMs float64                // GPU ms per GEMM, between the events: median and fastest trial
	hostUs    float64                // host µs per call while queueing a trial, median
	nodes     cudart.GraphNodeCounts // the graph's nodes by type; nil launching on the stream
}

// tflops is the median's throughput; 0 for a median of 0 ms, which only
// the fake's events give (they count calls, and none is made while its
// GEMMs run).
func (r result) tflops() float64 {
	if r.ms <= 0 {
		return 0
	}
	return r.flops() / (r.ms * 1e-3) / 1e12
}

// bench is what every shape runs on: one stream, one handle with its
// workspace in the pool, and A, B and C in the pool at the largest shape's
// sizes.
type bench struct {
	rt          cudart.Full
	p           *pool.Pool
	h           *cublas.Handle
	s           cudart.Stream
	start, stop cudart.Event
	a, b, c     *pool.Buffer
}

// newBench makes the bench for shapes on device 0.
func newBench(rt cudart.Full, lib *cublas.Library, shapes []shape) (_ *bench, err error) {
	var sa, sb, sc uint64
	for _, s := range shapes {
		e := uint64(s.t.Size())
		sa, sb, sc = max(sa, uint64(s.m*s.k)*e), max(sb, uint64(s.k*s.n)*e), max(sc, uint64(s.m*s.n)*e)
	}
	round := func(n uint64) uint64 { return (n + 255) &^ 255 }
	p, err := pool.New(rt, pool.WithDeviceBytes(workspace+round(sa)+round(sb)+round(sc)), pool.WithHostBytes(0))
	if err != nil {
		return nil, err
	}
	b := &bench{rt: rt, p: p}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	ws, err := p.WantDevice(workspace, pool.Name("cublas workspace"))
	if err != nil {
		return nil, err
	}
	for _, w := range []struct {
		buf  **pool.Buffer
		name string
		size uint64
	}{{&b.a, "A", sa}, {&b.b, "B", sb}, {&b.c, "C", sc}} {
		if *w.buf, err = p.WantDevice(w.size, pool.Name(w.name)); err != nil {
			return nil, err
		}
	}
	if err := p.Commit(); err != nil {
		return nil, err
	}
	if b.s, err = rt.StreamCreate(0); err != nil {
		return nil, err
	}
	if b.h, err = lib.NewHandle(0, b.s); err != nil {
		return nil, err
	}
	if err := b.h.SetWorkspace(ws); err != nil {
		return nil, err
	}
	if b.start, err = rt.EventCreate(0); err != nil {
		return nil, err
	}
	b.stop, err = rt.EventCreate(0)
	return b, err
}

// close gives back what newBench made, the handle before the pool that holds
// its workspace.
func (b *bench) close() error {
	var errs []error
	if b.h != nil {
		errs = append(errs, b.h.Close())
	}
	for _, e := range []cudart.Event{b.start, b.stop} {
		if e != 0 {
			errs = append(errs, b.rt.EventDestroy(0, e))
		}
	}
	if b.s != 0 {
		errs = append(errs, b.rt.StreamDestroy(0, b.s))
	}
	return errors.Join(append(errs, b.p.Close())...)
}

// matrix is buf as a column-major matrix of type t with ld rows.
func matrix(buf *pool.Buffer, t cublas.DataType, ld int) (cublas.Matrix, error) {
	p, err := buf.Ptr()
	return cublas.Matrix{Ptr: p, Type: t, LD: ld}, err
}

// run times s: its operands filled and copied in, tm.warmup GEMMs and a
// stream synchronisation, then tm.trials times tm.reps GEMMs between two
// events on the stream, queued one by one or, with tm.graph, as one launch
// of a graph that captured them. Then, outside the timing, it checks the
// last GEMM's result against the CPU.
func (b *bench) run(s shape, tm timing, progress io.Writer) (_ result, err error) {
	fmt.Fprintf(progress, "gemm: %s %dx%dx%d: %d warm-up calls, %d trials of %d\n", s.name, s.m, s.n, s.k, tm.warmup, tm.trials, tm.reps)
	va, vb := values(s.m*s.k, seedA), values(s.k*s.n, seedB)
	g := cublas.Gemm{TransA: cublas.NoTrans, TransB: cublas.NoTrans, M: s.m, N: s.n, K: s.k, Alpha: 1, Beta: 0}
	for _, m := range []struct {
		mat  *cublas.Matrix
		buf  *pool.Buffer
		ld   int
		vals []float32
	}{{&g.A, b.a, s.m, va}, {&g.B, b.b, s.k, vb}, {&g.C, b.c, s.m, nil}} {
		if *m.mat, err = matrix(m.buf, s.t, m.ld); err != nil {
			return result{}, err
		}
		if m.vals != nil {
			in := encode(m.vals, s.t)
			if err := b.rt.Memcpy(0, cudart.DeviceMem(m.mat.Ptr, uint64(len(in))), cudart.HostMem(in), cudart.HostToDevice); err != nil {
				return result{}, fmt.Errorf("%s: copying %s in: %w", s.name, m.buf.Name(), err)
			}
		}
	}
	for range tm.warmup {
		if err := b.h.Gemm(g); err != nil {
			return result{}, err
		}
	}
	if err := b.rt.StreamSynchronize(0, b.s); err != nil {
		return result{}, err
	}
	launch, err := b.launcher(g, tm)
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", s.name, err)
	}
	defer func() { err = errors.Join(err, launch.close()) }()
	ms, hostUs := make([]float64, tm.trials), make([]float64, tm.trials)
	for t := range tm.trials {
		if err := b.rt.EventRecord(0, b.start, b.s); err != nil {
			return result{}, err
		}
		t0 := time.Now()
		if err := launch.run(); err != nil {
			return result{}, err
		}
		hostUs[t] = float64(time.Since(t0).Nanoseconds()) / 1e3 / float64(tm.reps)
		if err := b.rt.EventRecord(0, b.stop, b.s); err != nil {
			return result{}, err
		}
		if err := b.rt.EventSynchronize(0, b.stop); err != nil {
			return result{}, err
		}
		d, err := b.rt.EventElapsedTime(0, b.start, b.stop)
		if err != nil {
			return result{}, err
		}
		ms[t] = float64(d.Nanoseconds()) / 1e6 / float64(tm.reps)
	}
	out := make([]byte, s.m*s.n*s.t.Size())
	if err := b.rt.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(g.C.Ptr, uint64(len(out))), cudart.DeviceToHost); err != nil {
		return result{}, fmt.Errorf("%s: copying C out: %w", s.name, err)
	}
	if err := check(s, va, vb, out); err != nil {
		return result{}, err
	}
	slices.Sort(ms)
	slices.Sort(hostUs)
	return result{shape: s, timing: tm, ms: median(ms), minMs: ms[0], hostUs: median(hostUs), nodes: launch.nodes}, nil
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// launcher queues a trial's GEMMs.
type launcher struct {
	run   func() error
	close func() error
	nodes cudart.GraphNodeCounts // the graph's, when it launches one
}

// launcher is tm.reps calls of g on the stream or, with tm.graph, one launch
// of a graph that captured them: captured, instantiated, launched once and
// synchronised, untimed, as the C program does.
func (b *bench) launcher(g cublas.Gemm, tm timing) (launcher, error) {
	calls := func() error {
		for range tm.reps {
			if err := b.h.Gemm(g); err != nil {
				return err
			}
		}
		return nil
	}
	if !tm.graph {
		return launcher{run: calls, close: func() error { return nil }}, nil
	}
	xs, counts, err := capture.Instantiate(b.rt, []capture.Stream{{Device: 0, Stream: b.s}}, calls)
	if err != nil {
		return launcher{}, err
	}
	x := xs[0]
	l := launcher{
		nodes: counts[0],
		run:   func() error { return b.rt.GraphLaunch(0, x, b.s) },
		close: func() error { return b.rt.GraphExecDestroy(0, x) },
	}
	if err := l.run(); err != nil {
		return launcher{}, errors.Join(err, l.close())
	}
	if err := b.rt.StreamSynchronize(0, b.s); err != nil {
		return launcher{}, errors.Join(err, l.close())
	}
	return l, nil
}
