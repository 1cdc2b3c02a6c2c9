package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

// EnvRuntime names the runtime Open gives a test, "cuda", "fake" or "auto";
// unset or empty is "auto". Programs read the same variable (choose.Env).
const EnvRuntime = runtimeenv.Env

// Open returns the runtime a test should use, as $CUDAPOOL_RUNTIME says:
// "cuda", "fake", or "auto" (CUDA when it loads and has a device, else the
// fake). opts apply to the fake, which is NewFakeT's (memcheck on unless
// WithoutMemcheck), but are checked whatever the runtime. Open logs which
// runtime it gives and registers a cleanup that closes it and fails t if
// memory was not given back: on the fake, any allocation still live
// (NewFakeT's report); on CUDA, free device memory more than a tolerance
// below its value at Open. The tolerance is what CUDA keeps for the context
// and the test cannot free: the device-side malloc heap and the printf
// buffer, both allocated when a kernel that uses them is loaded, at their
// sizes at cleanup, plus one 2 MiB page for rounding. With "cuda" and no
// usable CUDA, or a runtime none of these, Open fails t saying why.
//
// On CUDA, Open returns the cudart.Library that cudart.Open loaded; on the
// fake, the *Fake. Programs choose their runtime with package choose.
func Open(t TB, opts ...Option) cudart.Full {
	t.Helper()
	mode, from, err := runtimeenv.Mode("", ErrInvalidOption)
	if err == nil {
		_, err = configure(opts)
	}
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	if mode == "fake" {
		t.Logf("cudarttest: runtime: fake (%s)", from)
		return NewFakeT(t, opts...)
	}
	lib, description, err := runtimeenv.CUDA()
	switch {
	case err == nil:
		return watchCUDA(t, lib, description)
	case mode == "cuda":
		t.Fatalf("cudarttest: %s: CUDA is unusable: %v", from, err)
		return nil
	}
	t.Logf("cudarttest: runtime: fake; CUDA unavailable: %s", runtimeenv.Summary(err))
	return NewFakeT(t, opts...)
}

// watchCUDA logs lib and registers the cleanup that checks free memory and
// closes it.
func watchCUDA(t TB, lib cudart.Library, description string) cudart.Full {
	t.Helper()
	t.Logf("cudarttest: runtime: %s", description)
	before, _, err := lib.MemGetInfo(0)
	if err != nil {
		_ = lib.Close()
		t.Fatalf("cudarttest: free memory of device 0 at Open: %v", err)
		return nil
	}
	t.Cleanup(func() {
		defer func() {
			if err := lib.Close(); err != nil {
				t.Errorf("cudarttest: close CUDA: %v", err)
			}
		}()
		after, _, err := lib.MemGetInfo(0)
		if err != nil {
			t.Errorf("cudarttest: free memory of device 0 at cleanup: %v", err)
			return
		}
		tol := cudaTolerance(lib)
		if after+tol < before {
			t.Errorf("cudarttest: device 0 has %s (%d B) free at cleanup, %s (%d B) at Open (tolerance %s): something was not freed",
				bytesize.Format(after), after, bytesize.Format(before), before, bytesize.Format(tol))
		}
	})
	return lib
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
