package nccl_test

import (
	"encoding/binary"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/vmem"
)

// A window on each of two devices, in an arena exportable as NCCL needs,
// and an all-reduce from one half of the windows into the other, on the
// fake runtime. On a GPU host, rt is cudart.Open's Library.
func ExampleLibrary_RegisterWindows() {
	rt := cudarttest.NewFake(cudarttest.WithDevices(2))
	lib, err := nccl.Open(rt)
	if err != nil {
		panic(err)
	}
	devices := []int{0, 1}
	comms, err := lib.InitAll(devices)
	if err != nil {
		panic(err)
	}
	const size = 4 << 20
	bases := make([]cudart.DevicePtr, len(devices))
	for _, d := range devices {
		a, err := vmem.NewArena(rt, d, size, vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor))
		if err != nil {
			panic(err)
		}
		defer a.Close()
		// The whole window in one growth: NCCL maps one cuMemCreate
		// allocation a window.
		if err := a.Ensure(size); err != nil {
			panic(err)
		}
		bases[d] = a.Base()
	}
	windows, err := lib.RegisterWindows(comms, bases, size, nccl.WindowCollSymmetric)
	if err != nil {
		panic(err)
	}
	var ops []nccl.Op
	for _, d := range devices {
		b := binary.LittleEndian.AppendUint32(nil, uint32(10*(d+1)))
		if err := rt.Memcpy(d, cudart.DeviceMem(bases[d], 4), cudart.HostMem(b), cudart.HostToDevice); err != nil {
			panic(err)
		}
		ops = append(ops, comms[d].AllReduceOp(bases[d], bases[d].Add(size/2), 1, nccl.Int32, nccl.Sum, 0))
	}
	if err := lib.Group(ops...); err != nil {
		panic(err)
	}
	for _, d := range devices {
		b := make([]byte, 4)
		if err := rt.Memcpy(d, cudart.HostMem(b), cudart.DeviceMem(bases[d].Add(size/2), 4), cudart.DeviceToHost); err != nil {
			panic(err)
		}
		fmt.Printf("device %d: %d\n", d, binary.LittleEndian.Uint32(b))
	}
	for i, w := range windows {
		if err := w.Deregister(); err != nil {
			panic(err)
		}
		if err := comms[i].Destroy(); err != nil {
			panic(err)
		}
	}
	// Output:
	// device 0: 30
	// device 1: 30
}
