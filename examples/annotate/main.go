// Command annotate makes a pool's memory annotations in a chosen order of
// calls, or from a goroutine on an OS thread of its own, then fills two
// 4 KiB buffers with a kernel: it is the program to run under
// compute-sanitizer to check that the tool sees the pool's buffers whatever
// the order.
//
//	compute-sanitizer --tool memcheck annotate -order pool-first [-overflow]
//
// The orders:
//
//	pool-first    pool.New, two WantDevice, Commit, then the module's load
//	              and the launches
//	module-first  the module's load first, then the pool and the launches
//	thread        the module's load first; the heap and its two regions are
//	              registered and unregistered by a goroutine locked to an OS
//	              thread that has made no CUDA call
//
// -overflow makes the kernel write one byte past the end of the last buffer,
// which the tool must report. On the fake (-runtime fake) the fake's memcheck
// stands in for the tool. The exit status is 0 when every call succeeded and
// the overflow, if asked for, was caught by the fake or left for the tool;
// 1 when a call failed; 2 for a usage error.
//
//	go run ./examples/annotate [-runtime=auto|cuda|fake] [-order=pool-first|module-first|thread] [-overflow]
package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/bytekernels"
	"github.com/cudapool/cudapool/examples/cli"
	"github.com/cudapool/cudapool/pool"
)

const dev = 0

// bufBytes is the size of each of the two buffers.
const bufBytes = 4096

var orders = []string{"pool-first", "module-first", "thread"}

func main() { cli.Main(run) }

// about is what -h prints before the flags.
const about = `annotate makes a pool's memory annotations in the order -order names, then
fills two 4 KiB buffers with a kernel (one byte too many with -overflow); run
it under compute-sanitizer --tool memcheck to check that the tool sees the
buffers.`

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("annotate", about, stderr)
	which := cmd.Runtime()
	order := cmd.String("order", "pool-first", "order of the calls: pool-first, module-first or thread")
	overflow := cmd.Bool("overflow", false, "write one byte past the end of the last buffer")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if cmd.NArg() > 0 || !slices.Contains(orders, *order) {
		fmt.Fprintf(stderr, "annotate: want -order pool-first, module-first or thread and no arguments\n")
		return 2
	}
	// The thread is taken before any CUDA call, so that none has run on it.
	th := newThread()
	defer th.stop()
	rt, err := choose.Open(*which, cudarttest.WithMemcheck())
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\norder: %s, overflow: %v\n", rt.Description, *order, *overflow)
	s := &scenario{rt: rt, th: th, overflow: *overflow}
	err = s.run(*order)
	switch {
	case err == nil:
		fmt.Fprintln(stdout, "every call succeeded")
		return 0
	case *overflow && isFault(err):
		// The fault is sticky: the calls after it repeat it, joined below.
		first, _, _ := strings.Cut(err.Error(), "\n")
		fmt.Fprintf(stdout, "overflow caught: %s\n", first)
		return 0
	}
	return cmd.Fail(1, err)
}

// isFault is true for the errors a bad access ends a kernel with: an
// illegal address from the fake's memcheck, and either that or a launch
// failure when compute-sanitizer stops the kernel.
func isFault(err error) bool {
	return errors.Is(err, cudart.ErrIllegalAddress) || errors.Is(err, cudart.ErrLaunchFailure)
}

// thread runs functions on one OS thread, locked to a goroutine of its own.
type thread struct {
	work chan func()
}

func newThread() *thread {
	t := &thread{work: make(chan func())}
	ready := make(chan struct{})
	go func() {
		// Never unlocked: the thread ends with the goroutine, and no other
		// goroutine runs on it meanwhile.
		runtime.LockOSThread()
		close(ready)
		for fn := range t.work {
			fn()
		}
	}()
	<-ready
	return t
}

// do runs fn on t's thread and waits for it.
func (t *thread) do(fn func() error) error {
	done := make(chan error)
	t.work <- func() { done <- fn() }
	return <-done
}

func (t *thread) stop() { close(t.work) }

// scenario is one run: its runtime, the thread for -order thread, and the
// module once loaded.
type scenario struct {
	rt       cudart.Full
	th       *thread
	overflow bool
	fill     cudart.Function
	mod      cudart.Module
}

func (s *scenario) run(order string) (err error) {
	bytekernels.Register(s.rt)
	defer func() {
		if s.mod != 0 {
			err = errors.Join(err, s.rt.ModuleUnload(dev, s.mod))
		}
	}()
	switch order {
	case "pool-first":
		p, bufs, err := s.pool()
		if err != nil {
			return err
		}
		if err := s.load(); err != nil {
			return errors.Join(err, p.Close())
		}
		return errors.Join(s.fillAll(bufs), p.Close())
	case "module-first":
		if err := s.load(); err != nil {
			return err
		}
		p, bufs, err := s.pool()
		if err != nil {
			return err
		}
		return errors.Join(s.fillAll(bufs), p.Close())
	}
	if err := s.load(); err != nil {
		return err
	}
	return s.onThread()
}

// pool makes a 1 MiB device pool with two committed 4 KiB buffers.
func (s *scenario) pool() (*pool.Pool, []cudart.DevicePtr, error) {
	p, err := pool.New(s.rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
	if err != nil {
		return nil, nil, err
	}
	var bufs []*pool.Buffer
	for _, name := range []string{"first", "second"} {
		b, err := p.WantDevice(bufBytes, pool.Name(name))
		if err != nil {
			return nil, nil, errors.Join(err, p.Close())
		}
		bufs = append(bufs, b)
	}
	if err := p.Commit(); err != nil {
		return nil, nil, errors.Join(err, p.Close())
	}
	var ptrs []cudart.DevicePtr
	for _, b := range bufs {
		ptr, err := b.Ptr()
		if err != nil {
			return nil, nil, errors.Join(err, p.Close())
		}
		ptrs = append(ptrs, ptr)
	}
	return p, ptrs, nil
}

// onThread registers a heap over a cudaMalloc'd MiB and two regions in it
// on s.th's thread, fills the regions, and unregisters the heap there.
func (s *scenario) onThread() error {
	a, ok := s.rt.(cudart.Annotations)
	if !ok || !a.AnnotationsEnabled(dev) {
		return errors.New("the runtime takes no annotations")
	}
	base, err := s.rt.Malloc(dev, 1<<20)
	if err != nil {
		return err
	}
	bufs := []cudart.DevicePtr{base, base.Add(bufBytes)}
	var h cudart.MemHeap
	err = s.th.do(func() error {
		var err error
		if h, err = a.MemHeapRegister(dev, base, 1<<20, "annotate heap"); err != nil {
			return err
		}
		return a.MemRegionsRegister(h, []cudart.MemRegion{{Addr: bufs[0], Size: bufBytes, Name: "first"}, {Addr: bufs[1], Size: bufBytes, Name: "second"}})
	})
	if err == nil {
		err = s.fillAll(bufs)
	}
	if h != 0 {
		err = errors.Join(err, s.th.do(func() error { return a.MemHeapUnregister(h) }))
	}
	if isFault(err) {
		// The context is gone with the fault; Free would only repeat it.
		return err
	}
	return errors.Join(err, s.rt.Free(dev, base))
}

func (s *scenario) load() error {
	m, err := s.rt.ModuleLoadData(dev, bytekernels.PTX)
	if err != nil {
		return err
	}
	s.mod = m
	s.fill, err = s.rt.ModuleGetFunction(dev, m, bytekernels.Fill)
	return err
}

// fillAll fills each buffer, one byte past the last with -overflow, and
// waits: a kernel's bad access is reported at the synchronisation after it.
func (s *scenario) fillAll(bufs []cudart.DevicePtr) error {
	for i, b := range bufs {
		n := uint64(bufBytes)
		if s.overflow && i == len(bufs)-1 {
			n++
		}
		grid := cudart.Dim3{X: uint32((n + 255) / 256), Y: 1, Z: 1}
		block := cudart.Dim3{X: 256, Y: 1, Z: 1}
		if err := s.rt.LaunchKernel(dev, s.fill, grid, block, 0, 0, cudart.Arg(b), cudart.Arg(n), cudart.Arg[uint32](7)); err != nil {
			return err
		}
	}
	return s.rt.DeviceSynchronize(dev)
}
