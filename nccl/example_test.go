package nccl_test

import (
	"context"
	"encoding/binary"
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
