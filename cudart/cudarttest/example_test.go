package cudarttest_test

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// A fake device holds real bytes: what is copied in comes back out. It takes
// device memory in whole 2 MiB pages, as CUDA does, so 4 bytes cost 2 MiB.
func ExampleNewFake() {
	f := cudarttest.NewFake(cudarttest.WithDeviceMemory(1 << 30))
	p, err := f.Malloc(0, 4)
	if err != nil {
		panic(err)
	}
	defer f.Free(0, p)
	if err := f.Memcpy(0, cudart.DeviceMem(p, 4), cudart.HostMem([]byte("gpu!")), cudart.HostToDevice); err != nil {
		panic(err)
	}
	out := make([]byte, 4)
	if err := f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, 4), cudart.DeviceToHost); err != nil {
		panic(err)
	}
	free, total, _ := f.MemGetInfo(0)
	fmt.Printf("%s, %d of %d bytes free\n", out, free, total)
	// Output: gpu!, 1071644672 of 1073741824 bytes free
}

// Fault injection makes CUDA fail where a test wants it to, and the failed
// call changes nothing.
func ExampleFake_FailCall() {
	f := cudarttest.NewFake()
	if err := f.FailCall("cudaMalloc", 2); err != nil {
		panic(err) // no such call
	}
	_, err := f.Malloc(0, 1<<20)
	fmt.Println(errors.Is(err, cudart.ErrMemoryAllocation), f.Live().DeviceAllocs)
	fmt.Println(err)

	f.ClearFaults()
	_ = f.FailNth(2, 700) // the second call from now, whatever it is
	p, err := f.Malloc(0, 1<<20)
	fmt.Println(err)
	fmt.Println(f.DeviceSynchronize(0))
	fmt.Println(f.Free(0, p), f.Calls())
	// Output:
	// true 0
	// cudart: cudaMalloc(1.0 MiB): injected by FailCall("cudaMalloc"): cudaErrorMemoryAllocation (2): out of memory
	// <nil>
	// cudart: cudaDeviceSynchronize(device 0): injected by FailNth(2): cudaErrorIllegalAddress (700): an illegal memory access was encountered
	// <nil> [cudaMalloc cudaMalloc cudaDeviceSynchronize cudaFree]
}

// CheckLeaks names every allocation still live and the call that made it;
// NewFakeT runs it when a test ends.
func ExampleFake_CheckLeaks() {
	f := cudarttest.NewFake()
	if _, err := f.Malloc(0, 3<<20); err != nil {
		panic(err)
	}
	err := f.CheckLeaks()
	fmt.Println(errors.Is(err, cudarttest.ErrLeaked))
	fmt.Println(err)
	// Output:
	// true
	// cudarttest: CUDA resources still allocated: 1 still live:
	// 	device memory 0x200000000000 (3.0 MiB) from cudaMalloc (call #1)
}

// A fault in work on the device, such as a kernel's illegal access, shows at
// the synchronisation that runs the work, and every later call on the
// device fails the same way. DeviceReset frees everything the device held
// but, as on a GPU after a fault CUDA documents as fatal, leaves the device
// lost: a new process, here a new Fake, is the way back.
func ExampleFake_FailAsync() {
	f := cudarttest.NewFake()
	p, err := f.Malloc(0, 1<<20)
	if err != nil {
		panic(err)
	}
	if err := f.FailAsync(0, 700); err != nil {
		panic(err) // no such device, or a code CUDA does not make sticky
	}
	fmt.Println(f.Memset(0, p, 0, 1<<20)) // queued: nothing has failed yet
	fmt.Println(errors.Is(f.DeviceSynchronize(0), cudart.ErrIllegalAddress))
	_, err = f.Malloc(0, 1)
	fmt.Println(errors.Is(err, cudart.ErrIllegalAddress), f.Live().DeviceAllocs)

	fmt.Println(f.DeviceReset(0), f.Live().DeviceAllocs)
	_, err = f.Malloc(0, 1)
	fmt.Println(errors.Is(err, cudart.ErrDevicesUnavailable))

	g := cudarttest.NewFake()
	p, err = g.Malloc(0, 1)
	fmt.Println(err, g.Free(0, p))
	// Output:
	// <nil>
	// true
	// true 1
	// <nil> 0
	// true
	// <nil> <nil>
}
