package cudart

import (
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// recorder is a backend that records each CUDA call it is asked to make, with
// the device it would select (-1 for calls that select none), and returns
// the code set for that call.
type recorder struct {
	mu      sync.Mutex          // guards what invoke writes: calls may be concurrent
	calls   []string            // "cudaMalloc@0": name and device of each call
	codes   map[calls.Call]Code // what a call returns; 0 when absent
	closes  int
	selects []int    // the device of each cudaSetDevice
	copies  []uint64 // the byte count of each cudaMemcpy and cudaMemcpyAsync
	// launches are the C arguments of each cuLaunchKernel and the values
	// its kernel parameters point at.
	launches []launch
}

type launch struct {
	args   []uintptr
	params []uint64
}

func newRecorder() *recorder { return &recorder{codes: map[calls.Call]Code{}} }

// newRecorderLibrary is a library over rec (a recorder), with the driver loaded unless driverErr.
func newRecorderLibrary(rec backend, driverErr error) *library {
	return &library{be: rec, path: "recorder", driverErr: driverErr}
}

func (f *recorder) invoke(c calls.Call, dev int, fr *frame) ret {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !c.Device() {
		dev = -1
	}
	if c == calls.SetDevice {
		f.selects = append(f.selects, int(int32(fr.args[0])))
	}
	f.calls = append(f.calls, fmt.Sprintf("%s@%d", c, dev))
	if c == calls.Memcpy || c == calls.MemcpyAsync {
		f.copies = append(f.copies, uint64(fr.args[2]))
	}
	if c == calls.CuLaunchKernel {
		f.launches = append(f.launches, launch{args: append([]uintptr(nil), fr.args[:len(c.Args())]...), params: append([]uint64(nil), fr.params...)})
	}
	return ret{a: 0x1000, b: 0x2000, code: f.codes[c], failed: c}
}

func (f *recorder) text(code Code, which calls.Library) (string, string) {
	if which == calls.DriverLibrary {
		return fmt.Sprintf("CUDA_ERROR_%d", code), "recorded driver error"
	}
	return fmt.Sprintf("cudaError%d", code), "recorded runtime error"
}

func (f *recorder) close() { f.closes++ }
