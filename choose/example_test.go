package choose_test

import (
	"fmt"
	"log"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/pool"
)

// A program opens the runtime its -runtime flag names ("" for
// $CUDAPOOL_RUNTIME, else CUDA where it has a device and the fake where
// not), and says which it got.
func ExampleOpen() {
	rt, err := choose.Open("fake")
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	fmt.Println("runtime:", rt.Description)
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(1<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println("device arena:", p.Stats().Device.Capacity>>20, "MiB")
	// Output:
	// runtime: fake (cudarttest, no GPU used)
	// device arena: 64 MiB
}
