package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/bytekernels"
	"github.com/cudapool/cudapool/pool"
)

const dev = 0

// blockSize is the threads of one block of every launch.
const blockSize = 256

// data is what the bugs write into the buffers they later read: anything but
// ReleasedPoison, so that a read of poison is told from a read of the data.
const data byte = 0x5a

// bug is one deliberate memory bug.
type bug struct {
	name string
	// reads is true for a bug that reads memory it should not: guards see
	// it by the poison read back. The others write past a buffer, which
	// Check sees in the guard.
	reads bool
	// do sets the bug up and makes the bad access through e.bad; for a read,
	// it returns what the bad read brought back.
	do func(e *env) ([]byte, error)
}

var bugs = []bug{
	{name: "overflow", do: overflow},
	{name: "lifetime", reads: true, do: lifetime},
	{name: "released", reads: true, do: released},
	{name: "padding", do: padding},
}

// overflow writes one byte past the end of a 4 KiB buffer: the kernel is
// launched for size+1 bytes.
func overflow(e *env) ([]byte, error) {
	const size = 4096
	ptr, err := e.placed("weights", size)
	if err != nil {
		return nil, err
	}
	return nil, e.bad(e.fill(ptr, size+1, 1))
}

// lifetime reads a buffer at a step outside its Live range. Activations
// (step 0) and logits (step 2) are never alive together, so the planner
// gives them the same bytes; at step 1 those bytes are no buffer's, and the
// read of activations there is the bug. Had logits been alive at step 1, the
// read would have been of logits' bytes, which no tool can tell from a
// legitimate read of logits: the address is the same.
func lifetime(e *env) ([]byte, error) {
	const size = 4096
	act, err := e.p.WantDevice(size, pool.Name("activations"), pool.Live(0, 0))
	if err != nil {
		return nil, err
	}
	if _, err := e.p.WantDevice(size, pool.Name("logits"), pool.Live(2, 2)); err != nil {
		return nil, err
	}
	out, err := e.p.WantDevice(size, pool.Name("out"))
	if err != nil {
		return nil, err
	}
	src, err := e.place(act)
	if err != nil {
		return nil, err
	}
	dst, err := out.Ptr()
	if err != nil {
		return nil, err
	}
	if err := e.p.Step(0); err != nil {
		return nil, err
	}
	if err := e.fill(src, size, data); err != nil {
		return nil, err
	}
	if err := e.p.Step(1); err != nil {
		return nil, err
	}
	if err := e.bad(e.copyBytes(dst, src, size)); err != nil {
		return nil, err
	}
	return e.read(dst, size)
}

// released keeps a buffer's address past ReleaseAll and reads through it
// into memory of its own.
func released(e *env) ([]byte, error) {
	const size = 4096
	stale, err := e.placed("kv-cache", size)
	if err != nil {
		return nil, err
	}
	if err := e.fill(stale, size, data); err != nil {
		return nil, err
	}
	if err := e.p.ReleaseAll(); err != nil {
		return nil, err
	}
	dst, err := e.rt.Malloc(dev, size)
	if err != nil {
		return nil, err
	}
	e.onClose(func() error { return e.rt.Free(dev, dst) })
	if err := e.bad(e.copyBytes(dst, stale, size)); err != nil {
		return nil, err
	}
	return e.read(dst, size)
}

// padding writes 120 bytes into a 100-byte buffer: past its end but inside
// the 256 bytes it is aligned to, so no allocator-level check can see it.
func padding(e *env) ([]byte, error) {
	ptr, err := e.placed("scratch", 100)
	if err != nil {
		return nil, err
	}
	return nil, e.bad(e.fill(ptr, 120, 1))
}

// env is what a bug runs with: a pool, the kernels, and what to undo.
type env struct {
	rt             cudart.Full
	p              *pool.Pool
	fillFn, copyFn cudart.Function
	undo           []func() error
	// fault is the error of the bad access, when the runtime failed it:
	// memcheck's report. Later calls fail with it too (it is sticky).
	fault error
}

// errFaulted stops a bug after its bad access faulted: nothing after it can
// run on the device.
var errFaulted = errors.New("the bad access faulted")

// onClose queues fn for close, which gives back what a bug took whether or
// not its bad access faulted.
func (e *env) onClose(fn func() error) { e.undo = append(e.undo, fn) }

// close runs what was deferred, newest first. After a fault every call
// fails with it (it is sticky), so errors that repeat it are expected and
// dropped.
func (e *env) close() error {
	var errs []error
	for i := len(e.undo) - 1; i >= 0; i-- {
		if err := e.undo[i](); err != nil && (e.fault == nil || !isFault(err)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// bad records err, the result of the bug's own access, as a detection when
// it is a fault.
func (e *env) bad(err error) error {
	if isFault(err) {
		e.fault = err
		return errFaulted
	}
	return err
}

// isFault is true for the errors a bad access ends a kernel with: an
// illegal address from the fake's memcheck, and either that or a launch
// failure when compute-sanitizer stops the kernel.
func isFault(err error) bool {
	return errors.Is(err, cudart.ErrIllegalAddress) || errors.Is(err, cudart.ErrLaunchFailure)
}

// placed wants a device buffer of size bytes called name and places it:
// its address.
func (e *env) placed(name string, size uint64) (cudart.DevicePtr, error) {
	b, err := e.p.WantDevice(size, pool.Name(name))
	if err != nil {
		return 0, err
	}
	return e.place(b)
}

// place satisfies the pool's requests and returns b's address.
func (e *env) place(b *pool.Buffer) (cudart.DevicePtr, error) {
	if err := e.p.Satisfy(); err != nil {
		return 0, err
	}
	return b.Ptr()
}

// fill sets n bytes at ptr to v with the fill kernel, and waits: a kernel's
// bad access is reported at the synchronisation after it.
func (e *env) fill(ptr cudart.DevicePtr, n uint64, v byte) error {
	return e.launch(e.fillFn, n, cudart.Arg(ptr), cudart.Arg(n), cudart.Arg(uint32(v)))
}

// copyBytes copies n bytes from src to dst with the copy kernel, and waits.
func (e *env) copyBytes(dst, src cudart.DevicePtr, n uint64) error {
	return e.launch(e.copyFn, n, cudart.Arg(dst), cudart.Arg(src), cudart.Arg(n))
}

func (e *env) launch(fn cudart.Function, n uint64, args ...cudart.KernelArg) error {
	blocks := uint32((n + blockSize - 1) / blockSize)
	if err := e.rt.LaunchKernel(dev, fn, cudart.Dim1(blocks), cudart.Dim1(blockSize), 0, 0, args...); err != nil {
		return err
	}
	return e.rt.DeviceSynchronize(dev)
}

// read copies n bytes at ptr to the host.
func (e *env) read(ptr cudart.DevicePtr, n uint64) ([]byte, error) {
	out := make([]byte, n)
	err := e.rt.Memcpy(dev, cudart.HostMem(out), cudart.DeviceMem(ptr, n), cudart.DeviceToHost)
	return out, err
}

// result is one bug run under one detector.
type result struct {
	bug, detector string
	caught        bool // always false for detector none, which checks nothing
	how           string
}

// missed is true when a detector that checks failed to catch the bug.
func (r result) missed() bool { return r.detector != "none" && !r.caught }

// try runs b on rt with a pool as detector d wants it, and says whether d
// caught it. An error is a failure of the program, not a detection.
func try(rt cudart.Full, b bug, d string) (r result, err error) {
	r = result{bug: b.name, detector: d}
	opts := []pool.Option{pool.WithDeviceBytes(1 << 20), pool.WithHostBytes(0)}
	if d == "guards" {
		opts = append(opts, pool.WithGuards(256))
	}
	bytekernels.Register(rt)
	e := &env{rt: rt}
	defer func() {
		if cerr := e.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: clean up: %w", b.name, cerr))
		}
	}()
	m, err := rt.ModuleLoadData(dev, bytekernels.PTX)
	if err != nil {
		return r, err
	}
	e.onClose(func() error { return rt.ModuleUnload(dev, m) })
	if e.fillFn, err = rt.ModuleGetFunction(dev, m, bytekernels.Fill); err != nil {
		return r, err
	}
	if e.copyFn, err = rt.ModuleGetFunction(dev, m, bytekernels.Copy); err != nil {
		return r, err
	}
	if e.p, err = pool.New(rt, opts...); err != nil {
		return r, err
	}
	e.onClose(e.p.Close)

	got, err := b.do(e)
	switch {
	case e.fault != nil && d == "memcheck":
		r.caught, r.how = true, e.fault.Error()
		return r, nil
	case e.fault != nil && d == "none":
		r.how = "faulted, so a tool outside the program stopped it (see its report): " + e.fault.Error()
		return r, nil
	case e.fault != nil:
		return r, fmt.Errorf("%s: %w", b.name, e.fault)
	case err != nil:
		return r, fmt.Errorf("%s: %w", b.name, err)
	}
	switch d {
	case "none":
		r.how = "ran; nothing in the program checks it (run under compute-sanitizer)"
	case "memcheck":
		r.how = "the bad access ran without an error"
	case "guards":
		if b.reads {
			r.caught, r.how = judgeRead(got)
			break
		}
		err := e.p.Check()
		if err != nil && !errors.Is(err, pool.ErrCorrupted) {
			return r, fmt.Errorf("%s: %w", b.name, err)
		}
		r.caught, r.how = err != nil, "Check found every guard intact"
		if err != nil {
			r.how = err.Error()
		}
	}
	return r, nil
}

// judgeRead says whether a bad read brought back poison, which is how
// guards show it, rather than the data written.
func judgeRead(got []byte) (bool, string) {
	if n := bytes.Count(got, []byte{pool.ReleasedPoison}); n == len(got) {
		return true, fmt.Sprintf("read ReleasedPoison (%#02x) instead of the data", pool.ReleasedPoison)
	} else if n > 0 {
		return true, fmt.Sprintf("read ReleasedPoison (%#02x) in %d of %d bytes instead of the data", pool.ReleasedPoison, n, len(got))
	}
	if bytes.Count(got, []byte{data}) == len(got) {
		return false, fmt.Sprintf("read the data written (%#02x): the stale bytes were not poisoned", data)
	}
	return false, "read bytes neither poison nor the data written"
}
