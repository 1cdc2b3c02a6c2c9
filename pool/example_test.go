package pool_test

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// The C++ pool's cycle: queue requests, Commit, use the buffers, ReleaseAll.
// cudart.Open() gives the real runtime; the fake stands in for it here.
func Example() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(8<<20),
		pool.WithHostPinning(pinned.MethodHostAlloc))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	staging, _ := p.WantHost(1000, pool.Name("input.staging"))
	input, _ := p.WantDevice(1000, pool.Name("input"))
	act, _ := p.WantDevice(4096, pool.Name("activations"))
	if err := p.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	buf, _ := staging.Bytes()
	copy(buf, "pixels")
	ptr, _ := input.Ptr()
	if err := rt.Memcpy(p.Device(), cudart.DeviceMem(ptr, 1000), cudart.HostMem(buf), cudart.HostToDevice); err != nil {
		fmt.Println(err)
		return
	}
	for _, pl := range p.Layout() {
		fmt.Printf("%-6s %-13s offset %5d size %d\n", pl.Arena, pl.Name, pl.Offset, pl.Size)
	}
	_, err = p.WantDevice(1)
	fmt.Println(errors.Is(err, pool.ErrCommitted))

	if err := p.ReleaseAll(); err != nil {
		fmt.Println(err)
		return
	}
	_, err = act.Ptr()
	fmt.Println(errors.Is(err, pool.ErrReleased))
	// Output:
	// device input         offset     0 size 1000
	// device activations   offset  1024 size 4096
	// host   input.staging offset     0 size 1000
	// true
	// true
}

// Buffers that are never alive at the same step share memory.
func ExampleLive() {
	p, err := pool.New(cudarttest.NewFake(), pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	a, _ := p.WantDevice(1<<20, pool.Name("conv1.out"), pool.Live(0, 1))
	b, _ := p.WantDevice(1<<20, pool.Name("conv2.out"), pool.Live(1, 2))
	c, _ := p.WantDevice(1<<20, pool.Name("conv3.out"), pool.Live(2, 3))
	if err := p.Satisfy(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Offset() == c.Offset(), a.Offset() != b.Offset())
	st := p.Stats().Device
	fmt.Printf("used %d KiB, saved %d KiB\n", st.Used>>10, st.Saved>>10)
	// Output:
	// true true
	// used 2048 KiB, saved 1024 KiB
}

// Exhaustion is a typed error that says what was asked and what there is.
func ExampleExhaustedError() {
	p, err := pool.New(cudarttest.NewFake(), pool.WithDeviceBytes(4<<30), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	_, _ = p.WantDevice(4<<30, pool.Name("weights"))
	_, _ = p.WantDevice(1<<30, pool.Name("kv-cache"))
	err = p.Satisfy()
	var ex *pool.ExhaustedError
	fmt.Println(errors.As(err, &ex), ex.Arena)
	fmt.Println(err)
	// Output:
	// true device
	// pool: arena exhausted (device): need 5.0 GiB, have 4.0 GiB; largest pending: "weights" 4.0 GiB
}

// A growable arena reserves address space only and maps memory as buffers
// are placed; addresses never change as it grows.
func ExampleWithGrowableDevice() {
	p, err := pool.New(cudarttest.NewFake(), pool.WithGrowableDevice(64<<30), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fmt.Println("mapped at New:", p.Stats().Device.Mapped)
	b, _ := p.WantDevice(3 << 20)
	_ = p.Satisfy()
	before, _ := b.Ptr()
	_, _ = p.WantDevice(100 << 20)
	_ = p.Satisfy()
	after, _ := b.Ptr()
	fmt.Println("mapped MiB:", p.Stats().Device.Mapped>>20, "moved:", before != after)
	// Output:
	// mapped at New: 0
	// mapped MiB: 104 moved: false
}

// Printing a Layout shows every placed buffer as a table.
func ExamplePool_Layout() {
	p, err := pool.New(cudarttest.NewFake(), pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	_, _ = p.WantDevice(4096, pool.Name("x"), pool.Live(0, 1))
	_, _ = p.WantDevice(4096, pool.Name("y"), pool.Live(2, 3))
	_, _ = p.WantDevice(512, pool.Name("bias"))
	if err := p.Satisfy(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(p.Layout())
	// Output:
	// arena   name    offset  end     size     steps
	// device  "x"     0x0     0x1000  4.0 KiB  steps 0..1
	// device  "y"     0x0     0x1000  4.0 KiB  steps 2..3
	// device  "bias"  0x1000  0x1200  512 B    all steps
}

// Guards after every buffer catch a write past its end, with no tool
// attached.
func ExampleWithGuards() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0), pool.WithGuards(256))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	b, _ := p.WantDevice(1000, pool.Name("logits"))
	if err := p.Satisfy(); err != nil {
		fmt.Println(err)
		return
	}
	ptr, _ := b.Ptr()
	_ = rt.Memset(p.Device(), ptr, 0, 1001) // one byte too many
	_ = rt.DeviceSynchronize(p.Device())
	err = p.Check()
	fmt.Println(errors.Is(err, pool.ErrCorrupted))
	fmt.Println(err)
	// Output:
	// true
	// pool: guard corrupted after 1 buffer(s): device "logits" (1000 B): byte 0 past its end is 0x00, not 0xcb
}

// Step makes lifetimes checkable: under a memory tool (here the fake's
// memcheck; compute-sanitizer on a GPU) only the buffers alive at the step
// are allocated, so touching one outside its Live range is reported.
func ExamplePool_Step() {
	rt := cudarttest.NewFake(cudarttest.WithMemcheck())
	p, err := pool.New(rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	act, _ := p.WantDevice(8192, pool.Name("activations"), pool.Live(0, 0))
	logits, _ := p.WantDevice(4096, pool.Name("logits"), pool.Live(1, 1))
	if err := p.Satisfy(); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := act.Ptr()
	l, _ := logits.Ptr()
	fmt.Println("shared:", a == l)

	_ = p.Step(0)
	fmt.Println("activations at step 0:", rt.Memset(0, a, 0, 8192))
	_ = p.Step(1)
	fmt.Println("logits at step 1:", rt.Memset(0, l, 0, 4096))
	err = rt.Memset(0, a, 0, 8192) // activations are dead at step 1: a bug
	fmt.Println("activations at step 1 fail:", errors.Is(err, cudart.ErrIllegalAddress))
	// Output:
	// shared: true
	// activations at step 0: <nil>
	// logits at step 1: <nil>
	// activations at step 1 fail: true
}

// After a sticky fault (here injected; on a GPU, a kernel writing to a bad
// address), every CUDA call fails until cudaDeviceReset. The pool made
// before the reset then closes once with ErrDeviceReset. The fault was one
// CUDA documents as fatal, so the reset leaves the device lost for the rest
// of the process: a new pool fails there, and works in a new process (for
// the fake, a new Fake).
func ExamplePool_Close_afterDeviceReset() {
	rt := cudarttest.NewFake()
	opts := []pool.Option{pool.WithDeviceBytes(1 << 20), pool.WithHostBytes(1 << 20)}
	p, err := pool.New(rt, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = rt.FailAsync(0, cudart.ErrIllegalAddress.Code)
	scratch, _ := rt.Malloc(0, 256)
	_ = rt.Memset(0, scratch, 0, 256)
	fmt.Println("fault:", errors.Is(rt.DeviceSynchronize(0), cudart.ErrIllegalAddress))
	fmt.Println("release:", errors.Is(p.ReleaseAll(), cudart.ErrIllegalAddress))

	if err := rt.DeviceReset(0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("close:", errors.Is(p.Close(), pool.ErrDeviceReset))
	fmt.Println("close again:", p.Close())
	_, err = pool.New(rt, opts...)
	fmt.Println("same process:", errors.Is(err, cudart.ErrDevicesUnavailable))

	q, err := pool.New(cudarttest.NewFake(), opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	b, _ := q.WantHost(100)
	fmt.Println("new process:", q.Commit(), b.Size())
	// Output:
	// fault: true
	// release: true
	// close: true
	// close again: <nil>
	// same process: true
	// new process: <nil> 100
}
