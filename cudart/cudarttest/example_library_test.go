package cudarttest_test

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// The fake of a library with one call, "negate", which flips every bit of a
// buffer on a stream: its binding attaches it to the fake, and its work runs
// when the stream is synchronised.
func ExampleAttach() {
	f := cudarttest.NewFake()
	lib := cudarttest.Attach(f, "negate", []string{"negate"}, func(l *cudarttest.Library) *cudarttest.Library { return l })

	p, _ := f.Malloc(0, 4)
	_ = f.Memset(0, p, 0x0f, 4)
	err := lib.Enqueue(cudarttest.Work{Device: 0, Stream: 0, Call: "negate", Run: func(a *cudarttest.Access) error {
		b := make([]byte, 4)
		if err := a.Read(p, b); err != nil {
			return err
		}
		for i := range b {
			b[i] = ^b[i]
		}
		return a.Write(p, b)
	}})
	fmt.Println("queued:", err)
	_ = f.DeviceSynchronize(0)
	out := make([]byte, 4)
	_ = f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, 4), cudart.DeviceToHost)
	fmt.Printf("%x\n", out)
	_ = f.Free(0, p)
	// Output:
	// queued: <nil>
	// f0f0f0f0
}
