package pool_test

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// Serving: the weights once, and a request's buffers at two batch sizes,
// planned once each, in 4 slots sized for the larger.
func ExampleNewSlots() {
	rt := cudarttest.NewFake()
	shared := pool.NewProfile("shared")
	weights, _ := shared.Device(1<<20, pool.Name("weights"))
	var profiles []*pool.Profile
	for _, batch := range []uint64{1, 32} {
		pr := pool.NewProfile(fmt.Sprintf("batch%d", batch))
		_, _ = pr.Host(batch*4096, pool.Name("in"))
		_, _ = pr.Device(batch*4096, pool.Name("x"), pool.Live(0, 1))
		_, _ = pr.Device(batch*4096, pool.Name("y"), pool.Live(1, 2))
		_, _ = pr.Device(batch*4096, pool.Name("z"), pool.Live(2, 3))
		profiles = append(profiles, pr)
	}
	s, err := pool.NewSlots(rt, 4, pool.SlotLayout{Shared: shared, Profiles: profiles})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	w, _ := s.Shared(weights)
	fmt.Println("weights:", w.Size(), "bytes, loaded once")
	st := s.Stats()
	for _, p := range st.Profiles {
		fmt.Printf("%-7s uses %6d of a slot's %d device bytes\n", p.Name, p.Device, st.SlotDevice)
	}
	fmt.Println("device:", st.Device, "=", st.SharedDevice, "+", st.Slots, "x", st.SlotDevice)
	// Output:
	// weights: 1048576 bytes, loaded once
	// batch1  uses   8192 of a slot's 262144 device bytes
	// batch32 uses 262144 of a slot's 262144 device bytes
	// device: 2097152 = 1048576 + 4 x 262144
}

// One request: acquire a slot for its shape, stage the input in the slot's
// pinned buffer, queue the work on the slot's stream, wait for the output,
// release.
func ExampleSlots_Acquire() {
	rt := cudarttest.NewFake()
	pr := pool.NewProfile("batch1")
	in, _ := pr.Host(4096, pool.Name("in"))
	x, _ := pr.Device(4096, pool.Name("x"))
	s, err := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sl, err := s.Acquire(ctx, "batch1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Release(sl)
	stream, _ := sl.Stream()
	buf, _ := sl.Bytes(in)
	copy(buf, "request 1")
	dx, _ := sl.Ptr(x)
	_ = rt.MemcpyAsync(0, cudart.DeviceMem(dx, 4096), cudart.HostMem(buf), cudart.HostToDevice, stream)
	_ = rt.MemcpyAsync(0, cudart.HostMem(buf), cudart.DeviceMem(dx, 4096), cudart.DeviceToHost, stream)
	_ = rt.StreamSynchronize(0, stream)
	fmt.Printf("slot %d, profile %s: %s\n", sl.Index(), sl.Profile(), buf[:9])
	// Output: slot 0, profile batch1: request 1
}

// Release twice, or use after Release: errors, never a slot served twice.
func ExampleSlots_Release() {
	rt := cudarttest.NewFake()
	pr := pool.NewProfile("req")
	x, _ := pr.Device(256, pool.Name("x"))
	s, _ := pool.NewSlots(rt, 1, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
	defer s.Close()
	sl, _ := s.Acquire(context.Background(), "req")
	fmt.Println(s.Release(sl))
	fmt.Println(errors.Is(s.Release(sl), pool.ErrSlotReleased))
	_, err := sl.Ptr(x)
	fmt.Println(errors.Is(err, pool.ErrSlotReleased))
	// Output:
	// <nil>
	// true
	// true
}

// Publishing the slots' Stats at /debug/vars takes one line.
func ExampleSlots_Var() {
	rt := cudarttest.NewFake()
	pr := pool.NewProfile("req")
	_, _ = pr.Device(256)
	s, _ := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
	defer s.Close()
	expvar.Publish("example-slots", s.Var())
	fmt.Println(expvar.Get("example-slots").String()[:10])
	// Output: {"Slots":2
}
