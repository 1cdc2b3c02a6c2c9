// Package runtimeflag opens the CUDA runtime an example's -runtime flag names:
// auto (CUDA when it loads and has a device, else the fake), cuda or fake.
package runtimeflag

import (
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
		first, _, _ := strings.Cut(err.Error(), "\n")
		return cudarttest.NewFake(), "fake (cudarttest, no GPU used); CUDA unavailable: " + first, func() {}, nil
	}
	return nil, "", nil, fmt.Errorf("unknown -runtime %q: want auto, cuda or fake", which)
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
