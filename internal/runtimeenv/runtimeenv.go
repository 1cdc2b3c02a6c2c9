// Package runtimeenv is the part of choosing a runtime that programs
// (package choose) and tests (cudarttest.Open) share: the variable that
// names the runtime, what it may name, and CUDA loaded only where it has a
// usable device. Making the fake is left to each, as tests make theirs
// strict.
package runtimeenv

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cudapool/cudapool/cudart"
)

// Env names the runtime where the program or test leaves the choice open.
const Env = "CUDAPOOL_RUNTIME"

// Modes lists the runtimes a mode may name, for a flag's help text and for
// the error that refuses another.
const Modes = "auto (CUDA when it loads and has a device, else the fake), cuda or fake; empty: $" + Env + ", else auto"

// Mode resolves mode: "" is what $CUDAPOOL_RUNTIME names, and unset or empty
// is "auto". from says where the mode came from, for errors. A mode that is
// none of Modes is an error wrapping invalid.
func Mode(mode string, invalid error) (resolved, from string, err error) {
	from = fmt.Sprintf("runtime %q", mode)
	if mode == "" {
		mode = os.Getenv(Env)
		from = Env + "=" + mode
	}
	switch mode {
	case "cuda", "fake", "auto":
		return mode, from, nil
	case "":
		return "auto", from, nil
	}
	return "", from, fmt.Errorf("%w: unknown runtime %q (%s): want %s", invalid, mode, from, Modes)
}

// Load is cudart.Open; a test replaces it with a library that has no usable
// device.
var Load = func() (cudart.Library, error) { return cudart.Open() }

// CUDA loads CUDA and checks that it has a device, as a host can have the
// library and no usable GPU (no driver, or none visible to the process); it
// says which, e.g. "CUDA (libcudart.so.13, device 0: NVIDIA H100 80GB
// HBM3)". A library without a device is closed before the error returns.
func CUDA() (_ cudart.Library, description string, _ error) {
	lib, err := Load()
	if err != nil {
		return nil, "", err
	}
	n, err := lib.DeviceCount()
	if err == nil && n == 0 {
		err = cudart.ErrNoDevice
	}
	if err != nil {
		return nil, "", errors.Join(fmt.Errorf("%s loaded with no usable device: %w", lib.Path(), err), lib.Close())
	}
	name, _ := lib.DeviceName(0)
	return lib, fmt.Sprintf("CUDA (%s, device 0: %s)", lib.Path(), name), nil
}

// Summary is one line about why CUDA is unavailable, for "auto"; mode "cuda"
// gives the whole error, with every path the loader tried.
func Summary(err error) string {
	if errors.Is(err, cudart.ErrLibraryNotFound) {
		return "no CUDA runtime library found (mode cuda lists the paths tried)"
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}
