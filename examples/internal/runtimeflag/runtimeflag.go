// Package runtimeflag opens the CUDA runtime an example's -runtime flag names:
// auto (CUDA when it loads and has a device, else the fake), cuda or fake.
package runtimeflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// Usage is the flag's help text.
const Usage = "CUDA runtime to use: auto, cuda or fake"

// Open returns the runtime, a line saying which one it is, and a function
// that closes it. With "cuda", a machine without CUDA gets the loader's error.
func Open(which string) (cudart.Full, string, func(), error) {
	switch which {
	case "fake":
		return cudarttest.NewFake(), "fake (cudarttest, no GPU used)", func() {}, nil
	case "cuda", "auto":
		lib, err := openCUDA()
		if err == nil {
			name, _ := lib.DeviceName(0)
			return lib, fmt.Sprintf("CUDA (%s, device 0: %s)", lib.Path(), name), func() { _ = lib.Close() }, nil
		}
		if which == "cuda" {
			return nil, "", nil, err
		}
		return cudarttest.NewFake(), "fake (cudarttest, no GPU used); CUDA unavailable: " + summary(err), func() {}, nil
	}
	return nil, "", nil, fmt.Errorf("unknown -runtime %q: want auto, cuda or fake", which)
}

// summary is one line about why CUDA is unavailable; -runtime=cuda prints
// the whole error, with every path the loader tried.
func summary(err error) string {
	if errors.Is(err, cudart.ErrLibraryNotFound) {
		return "no CUDA runtime library found (-runtime=cuda lists the paths tried)"
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

func openCUDA() (*cudart.Lib, error) {
	lib, err := cudart.Open()
	if err != nil {
		return nil, err
	}
	n, err := lib.DeviceCount()
	if err == nil && n == 0 {
		err = cudart.ErrNoDevice
	}
	if err != nil {
		_ = lib.Close()
		return nil, err
	}
	return lib, nil
}
