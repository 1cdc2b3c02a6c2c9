package vmem_test

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/vmem"
)

func ExampleNewArena() {
	// On a GPU host, rt is the cudart.Library from cudart.Open.
	rt := cudarttest.NewFake()
	// 1 TiB of address space: reserving it costs no memory.
	a, err := vmem.NewArena(rt, 0, 1<<40)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	base := a.Base()
	for _, n := range []uint64{1 << 20, 100 << 20, 64 << 20} {
		if err := a.Ensure(n); err != nil {
			panic(err)
		}
		fmt.Printf("Ensure(%s): %s mapped, base unchanged: %t\n", bytesize.Format(n), bytesize.Format(a.Mapped()), a.Base() == base)
	}
	_ = a.Trim(0)
	fmt.Printf("after Trim(0): %s mapped\n", bytesize.Format(a.Mapped()))
	fmt.Println(a.Ensure(2 << 40))
	// Output:
	// Ensure(1.0 MiB): 2.0 MiB mapped, base unchanged: true
	// Ensure(100 MiB): 100 MiB mapped, base unchanged: true
	// Ensure(64 MiB): 100 MiB mapped, base unchanged: true
	// after Trim(0): 0 B mapped
	// vmem: arena exhausted: asked for 2.0 TiB, max 1.0 TiB (0 B mapped)
}

func ExampleNewVector() {
	rt := cudarttest.NewFake()
	v, err := vmem.NewVector(rt, 0)
	if err != nil {
		panic(err)
	}
	defer v.Close()
	if err := v.Grow(2 << 20); err != nil {
		panic(err)
	}
	first := v.Ptr()
	hello := []byte("hello, growable world")
	_ = rt.Memcpy(0, cudart.DeviceMem(first, uint64(len(hello))), cudart.HostMem(hello), cudart.HostToDevice)
	for n := uint64(4 << 20); n <= 64<<20; n *= 2 {
		if err := v.Grow(n); err != nil {
			panic(err)
		}
	}
	out := make([]byte, len(hello))
	_ = rt.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(v.Ptr(), uint64(len(out))), cudart.DeviceToHost)
	fmt.Printf("size %s, same address: %t, data: %s\n", bytesize.Format(v.Size()), v.Ptr() == first, out)
	// Output:
	// size 64 MiB, same address: true, data: hello, growable world
}
