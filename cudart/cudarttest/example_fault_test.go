package cudarttest_test

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// A test that expects a sticky fault (a kernel's illegal access, a GEMM
// whose operand runs past its buffer; here injected with FailAsync into a
// memset) checks the error of the synchronisation that ran the work, then
// resets the device: the reset frees what the device held, the memory and
// the stream here, so nothing is left to free and the strict fake's leak
// check passes. What a pool or a cuBLAS handle held goes with it too: their
// Close returns ErrDeviceReset once, then nil (pool's
// ExamplePool_Close_afterDeviceReset).
func ExampleFake_DeviceReset() {
	f := cudarttest.NewFake()
	p, err := f.Malloc(0, 1<<20)
	if err != nil {
		panic(err)
	}
	s, err := f.StreamCreate(0)
	if err != nil {
		panic(err)
	}
	if err := f.FailAsync(0, 700); err != nil {
		panic(err)
	}
	fmt.Println(f.MemsetAsync(0, p, 0, 1<<20, s)) // queued: nothing has failed yet
	fmt.Println(errors.Is(f.StreamSynchronize(0, s), cudart.ErrIllegalAddress))
	fmt.Println(errors.Is(f.DeviceSynchronize(0), cudart.ErrIllegalAddress)) // sticky

	fmt.Println(f.DeviceReset(0), f.Live().Empty(), f.CheckLeaks())
	// Output:
	// <nil>
	// true
	// true
	// <nil> true <nil>
}
