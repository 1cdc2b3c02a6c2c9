package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

const dev = 0

// blockSize is the threads of one block of every launch.
const blockSize = 256

// report is where pipeline writes: its results to w, a line a phase to
// progress as the phase starts, and note after every timing.
type report struct {
	w, progress io.Writer
	note        string
}

func (r report) phase(format string, args ...any) {
	fmt.Fprintf(r.progress, "pipeline: "+format+"\n", args...)
}

// pipeline plans the chain, captures it as a graph, runs it, plans it again
// after ReleaseAll, replays the same graph, and checks both results.
func pipeline(rt cudart.Full, n uint32, replays int, r report) (err error) {
	w := r.w
	r.phase("planning the chain's buffers, %d floats each", n)
	registerKernels(rt)
	s, err := rt.StreamCreate(dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rt.StreamDestroy(dev, s)) }()
	size := 4 * uint64(n)
	p, err := pool.New(rt, pool.WithDeviceBytes(activations*size+(2<<20)), pool.WithHostBytes(2*size+(2<<20)),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(s))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	m, err := rt.ModuleLoadData(dev, kernelsPTX)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rt.ModuleUnload(dev, m)) }()

	b, err := plan(p, n)
	if err != nil {
		return err
	}
	st := p.Stats().Device
	fmt.Fprintf(w, "chain of %d kernels over %d floats (%s a buffer):\n", len(chain), n, humanize.IBytes(size))
	for _, c := range chain {
		fmt.Fprintf(w, "  %s\n", c.describe)
	}
	fmt.Fprintf(w, "\n%s\n", p.Layout())
	fmt.Fprintf(w, "device arena: %s used; %s without sharing: %s (%.0f%%) saved by lifetimes\n\n",
		humanize.IBytes(st.Used), humanize.IBytes(st.Unshared), humanize.IBytes(st.Saved), 100*float64(st.Saved)/float64(st.Unshared))
	first, err := b.addresses()
	if err != nil {
		return err
	}
	r.phase("capturing the chain as a graph, then run 1")
	g, err := capture(rt, m, s, first, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rt.GraphExecDestroy(dev, g)) }()
	if err := runChecked(rt, g, s, first, 1); err != nil {
		return fmt.Errorf("first run: %w", err)
	}
	fmt.Fprintln(w, "run 1: graph launched; output matches the CPU")

	r.phase("ReleaseAll, the same plan again, then run 2")
	if err := p.ReleaseAll(); err != nil {
		return err
	}
	b, err = plan(p, n)
	if err != nil {
		return err
	}
	again, err := b.addresses()
	if err != nil {
		return err
	}
	if !again.same(first) {
		return errors.New("the same requests planned after ReleaseAll moved: the graph cannot be replayed")
	}
	fmt.Fprintln(w, "ReleaseAll and the same plan again: every buffer at the same address")
	if err := runChecked(rt, g, s, again, 2); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	fmt.Fprintln(w, "run 2: graph replayed on new input; output matches the CPU")

	per, err := timeReplays(rt, g, s, replays, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "replay: median %v per graph launch (5 rounds of %d launches)%s\n", per, replays, r.note)
	return nil
}

// capture records the chain on s into an instantiated graph: the copy in, one
// launch a step, the copy out. A failure mid capture still ends it, so the
// stream stays usable.
func capture(rt cudart.Full, m cudart.Module, s cudart.Stream, a addresses, n uint32) (cudart.GraphExec, error) {
	fns := map[string]cudart.Function{}
	for _, name := range []string{"affine", "add"} {
		f, err := rt.ModuleGetFunction(dev, m, name)
		if err != nil {
			return 0, err
		}
		fns[name] = f
	}
	// A global capture must end on the OS thread that began it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := rt.StreamBeginCapture(dev, s, cudart.CaptureModeGlobal); err != nil {
		return 0, err
	}
	record := func() error {
		size := 4 * uint64(n)
		if err := rt.MemcpyAsync(dev, cudart.DeviceMem(a.x[0], size), cudart.HostMem(a.in), cudart.HostToDevice, s); err != nil {
			return err
		}
		grid := cudart.Dim1((n + blockSize - 1) / blockSize)
		for _, st := range chain {
			args := []cudart.KernelArg{cudart.Arg(a.x[st.out]), cudart.Arg(a.x[st.in])}
			if st.kernel == "add" {
				args = append(args, cudart.Arg(a.x[st.in2]))
			} else {
				args = append(args, cudart.Arg(st.a), cudart.Arg(st.b))
			}
			args = append(args, cudart.Arg(n))
			if err := rt.LaunchKernel(dev, fns[st.kernel], grid, cudart.Dim1(blockSize), 0, s, args...); err != nil {
				return err
			}
		}
		return rt.MemcpyAsync(dev, cudart.HostMem(a.out), cudart.DeviceMem(a.x[activations-1], size), cudart.DeviceToHost, s)
	}
	recErr := record()
	graph, err := rt.StreamEndCapture(dev, s)
	if recErr != nil || err != nil {
		if err == nil {
			err = rt.GraphDestroy(dev, graph)
		}
		return 0, errors.Join(recErr, err)
	}
	x, err := rt.GraphInstantiate(dev, graph)
	return x, errors.Join(err, rt.GraphDestroy(dev, graph))
}

// runChecked writes an input derived from seed into the staging buffer,
// launches the graph, waits, and compares the output with the CPU's.
func runChecked(rt cudart.Full, g cudart.GraphExec, s cudart.Stream, a addresses, seed int) error {
	n := len(a.in) / 4
	in := make([]float32, n)
	for i := range in {
		in[i] = float32((i*seed)%1000-500) / 7
		binary.LittleEndian.PutUint32(a.in[4*i:], math.Float32bits(in[i]))
	}
	clear(a.out)
	if err := rt.GraphLaunch(dev, g, s); err != nil {
		return err
	}
	if err := rt.StreamSynchronize(dev, s); err != nil {
		return err
	}
	want := reference(in)
	for i, v := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(a.out[4*i:])); got != v {
			return fmt.Errorf("output[%d] = %v, the CPU computes %v", i, got, v)
		}
	}
	return nil
}

// timeReplays is the median, over five rounds, of the time per launch of
// count back-to-back graph launches.
func timeReplays(rt cudart.Full, g cudart.GraphExec, s cudart.Stream, count int, r report) (time.Duration, error) {
	var rounds []time.Duration
	for i := range 5 {
		r.phase("timing replays: round %d of 5, %d launches", i+1, count)
		start := time.Now()
		for range count {
			if err := rt.GraphLaunch(dev, g, s); err != nil {
				return 0, err
			}
		}
		if err := rt.StreamSynchronize(dev, s); err != nil {
			return 0, err
		}
		rounds = append(rounds, time.Since(start)/time.Duration(count))
	}
	slices.Sort(rounds)
	return rounds[len(rounds)/2], nil
}
