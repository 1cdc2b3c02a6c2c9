package cudarttest

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// EnvRuntime names the runtime Open gives tests: "cuda", "fake", or "auto"
// (the default when it is unset or empty).
const EnvRuntime = "CUDAPOOL_RUNTIME"

// Modes lists the runtimes OpenMode accepts, for a flag's help text.
const Modes = "auto (CUDA when it loads and has a device, else the fake), cuda or fake"

// Runtime is a runtime chosen by OpenMode: real CUDA or the fake, with a line
// that says which.
type Runtime struct {
	cudart.Full
	// Description says which runtime this is, e.g. "CUDA (libcudart.so,
	// device 0: NVIDIA H100 80GB HBM3)", and, for the fake under "auto",
	// why CUDA was not used.
	Description string
	// CUDA is true for real CUDA.
	CUDA bool
	lib  cudart.Library
}

// Close unloads CUDA; it does nothing for the fake. It frees nothing: free
// what was allocated first.
func (r *Runtime) Close() error {
	if r.lib == nil {
		return nil
	}
	return r.lib.Close()
}

// OpenMode opens the runtime mode names: "cuda" (an error, with the loader's
// message, when CUDA cannot be loaded or has no device), "fake" (NewFake with
// opts), or "auto" or "" (CUDA when it loads and has a device, else the
// fake). opts apply to the fake only, but are checked whatever the mode: a
// refused one is an error wrapping ErrInvalidOption. It is what programs with a -runtime
// flag call; tests call Open.
func OpenMode(mode string, opts ...Option) (*Runtime, error) {
	if _, err := configure(opts); err != nil {
		return nil, err
	}
	switch mode {
	case "fake":
		return &Runtime{Full: NewFake(opts...), Description: "fake (cudarttest, no GPU used)"}, nil
	case "cuda", "auto", "":
		lib, err := openCUDA()
		if err == nil {
			name, _ := lib.DeviceName(0)
			return &Runtime{Full: lib, Description: fmt.Sprintf("CUDA (%s, device 0: %s)", lib.Path(), name), CUDA: true, lib: lib}, nil
		}
		if mode == "cuda" {
			return nil, err
		}
		return &Runtime{Full: NewFake(opts...), Description: "fake (cudarttest, no GPU used); CUDA unavailable: " + summary(err)}, nil
	}
	return nil, fmt.Errorf("cudarttest: unknown runtime %q: want %s", mode, Modes)
}

// openCUDA loads CUDA and checks that it has a device.
func openCUDA() (cudart.Library, error) {
	lib, err := cudart.Open()
	if err != nil {
		return nil, err
	}
	n, err := lib.DeviceCount()
	if err == nil && n == 0 {
		err = cudart.ErrNoDevice
	}
	if err != nil {
		return nil, errors.Join(err, lib.Close())
	}
	return lib, nil
}

// summary is one line about why CUDA is unavailable; mode "cuda" gives the
// whole error, with every path the loader tried.
func summary(err error) string {
	if errors.Is(err, cudart.ErrLibraryNotFound) {
		return "no CUDA runtime library found (mode cuda lists the paths tried)"
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

// Open returns the runtime a test should use, as $CUDAPOOL_RUNTIME says
// (see OpenMode; opts apply to the fake, which is NewFakeT's: memcheck on
// unless WithoutMemcheck), logs which, and registers a
// cleanup that closes it and fails t if memory was not given back: on the
// fake, any allocation still live (NewFakeT's report); on CUDA, free device
// memory more than a tolerance below its value at Open. The tolerance is
// what CUDA keeps for the context and the test cannot free: the device-side
// malloc heap and the printf buffer, both allocated when a kernel that uses
// them is loaded, at their sizes at cleanup, plus one 2 MiB page for
// rounding. With "cuda" and no usable CUDA, Open fails t with the loader's
// message.
func Open(t TB, opts ...Option) cudart.Full {
	t.Helper()
	switch mode := os.Getenv(EnvRuntime); mode {
	case "fake":
		t.Logf("cudarttest: runtime: fake (%s=fake)", EnvRuntime)
		return NewFakeT(t, opts...)
	case "auto", "":
		rt, err := OpenMode("cuda")
		if err != nil {
			t.Logf("cudarttest: runtime: fake; CUDA unavailable: %s", summary(err))
			return NewFakeT(t, opts...)
		}
		return watchCUDA(t, rt)
	default:
		rt, err := OpenMode(mode)
		if err != nil {
			t.Fatalf("cudarttest: %s=%s: %v", EnvRuntime, mode, err)
			return nil
		}
		return watchCUDA(t, rt)
	}
}

// watchCUDA logs rt and registers the cleanup that checks free memory and
// closes it.
func watchCUDA(t TB, rt *Runtime) cudart.Full {
	t.Helper()
	t.Logf("cudarttest: runtime: %s", rt.Description)
	before, _, err := rt.MemGetInfo(0)
	if err != nil {
		_ = rt.Close()
		t.Fatalf("cudarttest: free memory of device 0 at Open: %v", err)
		return nil
	}
	t.Cleanup(func() {
		defer func() {
			if err := rt.Close(); err != nil {
				t.Errorf("cudarttest: close CUDA: %v", err)
			}
		}()
		after, _, err := rt.MemGetInfo(0)
		if err != nil {
			t.Errorf("cudarttest: free memory of device 0 at cleanup: %v", err)
			return
		}
		tol := cudaTolerance(rt)
		if after+tol < before {
			t.Errorf("cudarttest: device 0 has %s (%d B) free at cleanup, %s (%d B) at Open (tolerance %s): something was not freed",
				bytesize.Format(after), after, bytesize.Format(before), before, bytesize.Format(tol))
		}
	})
	return rt
}

// cudaTolerance is the memory CUDA may keep after a test frees everything:
// the malloc heap and printf buffer at their current sizes, and a page.
func cudaTolerance(rt cudart.Device) uint64 {
	const page = 2 << 20
	tol := uint64(page)
	for _, l := range []cudart.Limit{cudart.LimitMallocHeapSize, cudart.LimitPrintfFifoSize} {
		if v, err := rt.DeviceGetLimit(0, l); err == nil {
			tol += v
		}
	}
	return tol
}
