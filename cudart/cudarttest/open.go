package cudarttest

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// EnvRuntime names the runtime to use, "cuda", "fake" or "auto", where the
// program or test leaves the choice open: Open, and OpenMode("") (the
// -runtime flag's default in the examples). Unset or empty is "auto".
const EnvRuntime = "CUDAPOOL_RUNTIME"

// Modes lists the runtimes OpenMode accepts, for a flag's help text.
const Modes = "auto (CUDA when it loads and has a device, else the fake), cuda or fake; empty: $" + EnvRuntime + ", else auto"

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

// Unwrap is the runtime chosen, bare: bindings find the fake through it
// (cudart.As).
func (r *Runtime) Unwrap() cudart.Runtime {
	if r == nil {
		return nil
	}
	return r.Full
}

// Close unloads CUDA; it does nothing for the fake. It frees nothing: free
// what was allocated first.
func (r *Runtime) Close() error {
	if r.lib == nil {
		return nil
	}
	return r.lib.Close()
}

// OpenMode opens the runtime mode names: "cuda" (an error saying why when
// CUDA cannot be loaded or has no usable device), "fake" (NewFake with
// opts), "auto" (CUDA when it loads and has a device, else the fake), or ""
// (what $CUDAPOOL_RUNTIME names, else "auto"). opts apply to the fake only,
// but are checked whatever the mode: a refused one, or an unknown mode, is
// an error wrapping ErrInvalidOption. It is what programs call, with their
// -runtime flag (default ""); tests call Open, which reads the variable
// the same way.
func OpenMode(mode string, opts ...Option) (*Runtime, error) {
	if _, err := configure(opts); err != nil {
		return nil, err
	}
	from := fmt.Sprintf("runtime %q", mode)
	if mode == "" {
		mode, from = os.Getenv(EnvRuntime), EnvRuntime+"="+os.Getenv(EnvRuntime)
	}
	switch mode {
	case "fake":
		return &Runtime{Full: NewFake(opts...), Description: "fake (cudarttest, no GPU used)"}, nil
	case "cuda", "auto", "":
		rt, err := openCUDA()
		switch {
		case err == nil:
			return rt, nil
		case mode == "cuda":
			return nil, fmt.Errorf("cudarttest: %s: CUDA is unusable: %w", from, err)
		}
		return &Runtime{Full: NewFake(opts...), Description: "fake (cudarttest, no GPU used); CUDA unavailable: " + summary(err)}, nil
	}
	return nil, fmt.Errorf("%w: unknown runtime %q (%s): want %s", ErrInvalidOption, mode, from, Modes)
}

// loadCUDA is cudart.Open, and a library with no usable device in a test.
var loadCUDA = func() (cudart.Library, error) { return cudart.Open() }

// openCUDA loads CUDA and checks that it has a device: a host can have the
// library and no usable GPU (no driver, or none visible to the process).
func openCUDA() (*Runtime, error) {
	lib, err := loadCUDA()
	if err != nil {
		return nil, err
	}
	n, err := lib.DeviceCount()
	if err == nil && n == 0 {
		err = cudart.ErrNoDevice
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s loaded with no usable device: %w", lib.Path(), err), lib.Close())
	}
	name, _ := lib.DeviceName(0)
	return &Runtime{Full: lib, Description: fmt.Sprintf("CUDA (%s, device 0: %s)", lib.Path(), name), CUDA: true, lib: lib}, nil
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
		rt, err := openCUDA()
		if err != nil {
			t.Logf("cudarttest: runtime: fake; CUDA unavailable: %s", summary(err))
			return NewFakeT(t, opts...)
		}
		return watchCUDA(t, rt)
	default:
		rt, err := OpenMode("", opts...)
		if err != nil {
			t.Fatalf("%v", err)
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
