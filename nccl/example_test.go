package nccl_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/pool"
)

// A slot on each of two devices with a communicator of its own: each
// device's request sums its buffer with the other's, on its slot's stream,
// on the fake runtime.
func ExampleLibrary_ForSlots() {
	rt := cudarttest.NewFake(cudarttest.WithDevices(2))
	lib, err := nccl.Open(rt)
	if err != nil {
		panic(err)
	}
	devices := []int{0, 1}
	// One slot a device: slot 0's communicators, made before the slots.
	comms, err := lib.InitAll(devices)
	if err != nil {
		panic(err)
	}
	pr := pool.NewProfile("request")
	x, _ := pr.Device(4, pool.Name("x"))
	slots, err := pool.NewMultiSlots(rt, devices, 1, pool.SlotLayout{
		Profiles: []*pool.Profile{pr},
		Attach:   []pool.Attachment{lib.ForSlots([][]*nccl.Comm{comms})},
	})
	if err != nil {
		panic(err)
	}

	sums := make([]uint32, len(devices))
	var wg sync.WaitGroup
	for _, d := range devices {
		wg.Go(func() { // a request on each device, its rank
			sl, err := slots.On(d).Acquire(context.Background(), "request")
			if err != nil {
				panic(err)
			}
			defer slots.Release(sl)
			c, err := pool.Attached[nccl.Lent](sl)
			if err != nil {
				panic(err)
			}
			p, _ := sl.Ptr(x)
			b := binary.LittleEndian.AppendUint32(nil, uint32(10*(d+1)))
			if err := rt.Memcpy(d, cudart.DeviceMem(p, 4), cudart.HostMem(b), cudart.HostToDevice); err != nil {
				panic(err)
			}
			if err := c.AllReduce(p, p, 1, nccl.Int32, nccl.Sum); err != nil {
				panic(err)
			}
			s, _ := c.Stream()
			if err := rt.StreamSynchronize(d, s); err != nil {
				panic(err)
			}
			if err := rt.Memcpy(d, cudart.HostMem(b), cudart.DeviceMem(p, 4), cudart.DeviceToHost); err != nil {
				panic(err)
			}
			sums[c.Rank()] = binary.LittleEndian.Uint32(b)
		})
	}
	wg.Wait()
	fmt.Println("each rank's sum:", sums)
	// The communicators are the caller's: destroyed after the slots.
	if err := slots.Close(); err != nil {
		panic(err)
	}
	for _, c := range comms {
		if err := c.Destroy(); err != nil {
			panic(err)
		}
	}
	// Output:
	// each rank's sum: [30 30]
}

// Blocking communicators, whose eager all-reduces NCCL launches in the
// call: one goroutine drives both devices with a group, on the fake
// runtime.
func ExampleWithInlineLaunch() {
	rt := cudarttest.NewFake(cudarttest.WithDevices(2))
	lib, err := nccl.Open(rt)
	if err != nil {
		panic(err)
	}
	comms, err := lib.InitAll([]int{0, 1}, nccl.WithInlineLaunch())
	if err != nil {
		panic(err)
	}
	var ops []nccl.Op
	bufs := make([]cudart.DevicePtr, 2)
	streams := make([]cudart.Stream, 2)
	for d, c := range comms {
		if bufs[d], err = rt.Malloc(d, 4); err != nil {
			panic(err)
		}
		if streams[d], err = rt.StreamCreate(d); err != nil {
			panic(err)
		}
		b := binary.LittleEndian.AppendUint32(nil, uint32(d+1))
		if err := rt.Memcpy(d, cudart.DeviceMem(bufs[d], 4), cudart.HostMem(b), cudart.HostToDevice); err != nil {
			panic(err)
		}
		ops = append(ops, c.AllReduceOp(bufs[d], bufs[d], 1, nccl.Int32, nccl.Sum, streams[d]))
	}
	if err := lib.Group(ops...); err != nil {
		panic(err)
	}
	for d, c := range comms {
		// On a GPU, where a peer may be gone: lib.Wait, bounded.
		if err := rt.StreamSynchronize(d, streams[d]); err != nil {
			panic(err)
		}
		b := make([]byte, 4)
		if err := rt.Memcpy(d, cudart.HostMem(b), cudart.DeviceMem(bufs[d], 4), cudart.DeviceToHost); err != nil {
			panic(err)
		}
		fmt.Printf("rank %d, blocking %v: %d\n", c.Rank(), c.InlineLaunch(), binary.LittleEndian.Uint32(b))
		if err := errors.Join(c.Destroy(), rt.Free(d, bufs[d]), rt.StreamDestroy(d, streams[d])); err != nil {
			panic(err)
		}
	}
	// Output:
	// rank 0, blocking true: 3
	// rank 1, blocking true: 3
}
