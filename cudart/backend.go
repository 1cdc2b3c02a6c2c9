package cudart

import (
	"math"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// ret is what one call into CUDA returned: the code, which call returned it
// (the device selection before the call may fail instead), and the values the
// call wrote through its out-parameters.
type ret struct {
	a, b   uint64
	code   Code
	failed calls.Call
	// refused, when not nil, is why the call was refused before CUDA, code
	// being the code CUDA would have returned.
	refused *refusal
}

// codeClosed is the code of a call not made, the library being nil or
// closed; no CUDA code is negative.
const codeClosed Code = -1

// backend makes the calls of the table: *dlBackend through internal/dl, a recorder
// in tests. It selects dev first, on the same OS thread, for the calls the
// table marks as depending on the current device.
type backend interface {
	invoke(c calls.Call, dev int, f *frame) ret
	// text is CUDA's name and message for code, "" where the library has none.
	text(code Code, which calls.Library) (name, msg string)
	// close unloads the libraries; nothing may be called after.
	close()
}

// cint is a device ordinal or enum as a C int argument. A value that does not
// fit becomes one CUDA rejects, rather than wrapping around to a valid one.
func cint[T ~int](v T) uintptr {
	if int(v) != int(int32(v)) {
		return uintptr(math.MaxUint32 &^ math.MaxInt32) // INT_MIN
	}
	return uintptr(uint32(int32(v)))
}
