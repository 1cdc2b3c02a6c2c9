package binding

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/dl"
)

// Choose says how the binding of the library called name (for messages,
// e.g. "cuBLAS") opens on rt. On cudarttest's fake, bare or inside a wrapper
// that names it (cudart.As), fake is that fake and no library is loaded;
// on any other runtime the library is loaded, and rt must select devices,
// since the libraries work on the calling thread's current device. dev is
// rt as a cudart.Device whenever rt is one, fake or not. A nil runtime, or
// one that is not the fake and cannot select devices, is refused with an
// error wrapping invalid, the binding's invalid-option sentinel.
func Choose(rt cudart.Runtime, name string, invalid error) (fake *cudarttest.Fake, dev cudart.Device, err error) {
	if rt == nil {
		return nil, nil, fmt.Errorf("%w: nil runtime", invalid)
	}
	dev, ok := rt.(cudart.Device)
	if f, isFake := cudart.As[*cudarttest.Fake](rt); isFake {
		return f, dev, nil
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: the runtime (%T) cannot select devices (cudart.Device), which %s needs", invalid, rt, name)
	}
	return nil, dev, nil
}

// LoadFailure reads a loader's error: when err is the loader's failure
// (*dl.Failure), tried is each candidate with the loader's message and
// cause is notFound when none loaded or noSymbol when the first that loaded
// lacks a function, the binding's two sentinels; ok is false for any other
// error, which the binding returns as it is.
func LoadFailure(err error, notFound, noSymbol error) (tried []string, cause error, ok bool) {
	var f *dl.Failure
	if !errors.As(err, &f) {
		return nil, nil, false
	}
	if len(f.Missing) > 0 {
		return f.Tried, noSymbol, true
	}
	return f.Tried, notFound, true
}

// LoadMessage is the text of a binding's LoadError: prefix is the binding's
// package name, which its sentinels' messages start with, and lib the
// library's file stem, e.g. "nccl: cannot load libnccl (symbol not found);
// tried:" and a line for each candidate tried.
func LoadMessage(prefix, lib string, cause error, tried []string) string {
	s := prefix + ": cannot load " + lib + " (" + strings.TrimPrefix(cause.Error(), prefix+": ") + "); tried:"
	for _, t := range tried {
		s += "\n  " + t
	}
	return s
}
