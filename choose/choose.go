package choose

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

// Env names the runtime to use, "cuda", "fake" or "auto", where the program
// leaves the choice open: Open(""), the -runtime flag's default in the
// examples. Unset or empty is "auto". Tests read the same variable
// (cudarttest.Open, whose cudarttest.EnvRuntime it is).
const Env = runtimeenv.Env

// Modes lists the runtimes Open accepts, for a flag's help text.
const Modes = runtimeenv.Modes

// Runtime is a runtime chosen by Open: real CUDA or the fake, with a line
// that says which. Its Unwrap names the runtime it wraps, so that every
// binding takes it as that runtime (cudart.As): cublas.Open computes on the
// fake's cuBLAS when it wraps the fake.
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

// Unwrap is the runtime chosen, bare: the *cudarttest.Fake, or the
// cudart.Library that cudart.Open loaded.
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

// Open opens the runtime mode names: "cuda" (an error saying why when CUDA
// cannot be loaded or has no usable device), "fake" (cudarttest.NewFake with
// opts), "auto" (CUDA when it loads and has a device, else the fake), or ""
// (what $CUDAPOOL_RUNTIME names, else "auto"). opts apply to the fake only,
// but are checked whatever the mode: a refused one, or an unknown mode, is
// an error wrapping cudarttest.ErrInvalidOption. Programs pass it their
// -runtime flag (default "").
func Open(mode string, opts ...cudarttest.Option) (*Runtime, error) {
	if err := cudarttest.CheckOptions(opts...); err != nil {
		return nil, err
	}
	mode, from, err := runtimeenv.Mode(mode, cudarttest.ErrInvalidOption)
	if err != nil {
		return nil, err
	}
	const fake = "fake (cudarttest, no GPU used)"
	if mode == "fake" {
		return &Runtime{Full: cudarttest.NewFake(opts...), Description: fake}, nil
	}
	lib, description, err := runtimeenv.CUDA()
	switch {
	case err == nil:
		return &Runtime{Full: lib, Description: description, CUDA: true, lib: lib}, nil
	case mode == "cuda":
		return nil, fmt.Errorf("choose: %s: CUDA is unusable: %w", from, err)
	}
	return &Runtime{Full: cudarttest.NewFake(opts...), Description: fake + "; CUDA unavailable: " + runtimeenv.Summary(err)}, nil
}
