package pinned_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
)

// Pin 64 MiB mapped into the device, and read what the host wrote through
// the device address, with no copy to device memory. On a GPU host, pass
// the runtime from cudart.Open instead of the fake.
func ExampleAlloc() {
	rt := cudarttest.NewFake()
	r, err := pinned.Alloc(rt, 0, 64<<20, pinned.WithFlags(pinned.Mapped))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := r.Free(); err != nil {
			log.Fatal(err)
		}
	}()
	b := r.Bytes()
	copy(b, "written by the host")

	dev, err := r.DevicePtr()
	if err != nil {
		log.Fatal(err)
	}
	got := make([]byte, 19)
	if err := rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(dev, 19), cudart.DeviceToHost); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d MiB by %s, device sees %q\n", r.Flags(), len(b)>>20, r.Method(), got)
	// Output: Mapped: 64 MiB by Register, device sees "written by the host"
}

// Pin a slice the program already has, copy from it at pinned speed, and
// see an overlapping registration refused.
func ExampleRegister() {
	rt := cudarttest.NewFake()
	buf := make([]byte, 1<<20)
	g, err := pinned.Register(rt, 0, buf, pinned.Portable)
	if err != nil {
		log.Fatal(err)
	}
	dev, err := rt.Malloc(0, uint64(len(buf)))
	if err != nil {
		log.Fatal(err)
	}
	if err := rt.Memcpy(0, cudart.DeviceMem(dev, uint64(len(buf))), cudart.HostMem(buf), cudart.HostToDevice); err != nil {
		log.Fatal(err)
	}

	_, err = pinned.Register(rt, 0, buf[4096:8192], 0)
	fmt.Println("overlap refused:", errors.Is(err, pinned.ErrAlreadyRegistered))

	if err := rt.Free(0, dev); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unregistered:", g.Unregister())
	// Output:
	// overlap refused: true
	// unregistered: <nil>
}
