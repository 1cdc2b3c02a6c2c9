// Package callerr is what the Error types of the bindings (cudart's,
// cublas's and nccl's) share: the message of a failed library call, and
// errors.Is matching by the library's code. Each binding keeps its own
// exported Error type, fields and sentinels.
package callerr

import (
	"errors"
	"fmt"
)

// Text is the message of a failed call, "prefix: call: name (code):
// message", e.g. "cudart: cudaMalloc(4.0 GiB) on device 0:
// cudaErrorMemoryAllocation (2): out of memory"; a sentinel, whose call is
// "", has no "call: ".
func Text(prefix, call, name string, code int, message string) string {
	if call == "" {
		return fmt.Sprintf("%s: %s (%d): %s", prefix, name, code, message)
	}
	return fmt.Sprintf("%s: %s: %s (%d): %s", prefix, call, name, code, message)
}

// Match says whether target is, or wraps, an E that same accepts: an Error's
// Is, given a same that compares the codes, matches every error of one code
// whichever call returned it.
func Match[E error](target error, same func(E) bool) bool {
	var t E
	return errors.As(target, &t) && same(t)
}
