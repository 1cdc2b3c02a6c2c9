package pool_test

import (
	"context"
	"fmt"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// Serving on two GPUs: 2 slots on each, the weights on each, and requests
// taking whichever slot is free.
func ExampleNewMultiSlots() {
	rt := cudarttest.NewFake(cudarttest.WithDevices(2))
	shared := pool.NewProfile("shared")
	weights, _ := shared.Device(1<<20, pool.Name("weights"))
	pr := pool.NewProfile("batch1")
	_, _ = pr.Device(4096, pool.Name("x"))
	m, err := pool.NewMultiSlots(rt, []int{0, 1}, 2, pool.SlotLayout{Shared: shared, Profiles: []*pool.Profile{pr}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for _, d := range m.Devices() {
		w, _ := m.On(d).Shared(weights)
		fmt.Printf("device %d: weights of %d bytes, to load\n", d, w.Size())
	}
	ctx := context.Background()
	a, _ := m.Acquire(ctx, "batch1")
	b, _ := m.Acquire(ctx, "batch1")
	fmt.Println("two requests on two devices:", a.Device() != b.Device())
	_ = m.Release(a)
	_ = m.Release(b)
	fmt.Println("slots:", m.Stats().Slots)
	// Output:
	// device 0: weights of 1048576 bytes, to load
	// device 1: weights of 1048576 bytes, to load
	// two requests on two devices: true
	// slots: 4
}

// A request that runs on both GPUs at once (tensor parallel) takes slot k
// of each: the slots of one index, whose communicators (one InitAll a slot
// index, attached with nccl's ForSlots) are one communicator's ranks.
func ExampleMultiSlots_AcquireGroup() {
	rt := cudarttest.NewFake(cudarttest.WithDevices(2))
	pr := pool.NewProfile("batch1")
	_, _ = pr.Device(4096, pool.Name("x"))
	m, err := pool.NewMultiSlots(rt, []int{0, 1}, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	ctx := context.Background()
	a, _ := m.AcquireGroup(ctx, "batch1")
	b, _ := m.AcquireGroup(ctx, "batch1")
	for _, g := range []pool.SlotGroup{a, b} {
		// State kept per group (graphs captured on its slots) is by Index.
		fmt.Printf("group %d:", g.Index())
		for _, sl := range g.Slots() {
			fmt.Printf(" slot %d of device %d", sl.Index(), sl.Device())
		}
		fmt.Println()
	}
	_ = a.Release()
	_ = b.Release()
	fmt.Println("in use:", m.Stats().InUse)
	// Output:
	// group 0: slot 0 of device 0 slot 0 of device 1
	// group 1: slot 1 of device 0 slot 1 of device 1
	// in use: 0
}
