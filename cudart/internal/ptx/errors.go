package ptx

import (
	"errors"
	"fmt"
)

// The codes the JIT refuses text with: text that does not begin with a
// .version directive is no PTX to the driver (CUDA_ERROR_INVALID_IMAGE);
// PTX that does not parse fails to compile (CUDA_ERROR_INVALID_PTX).
const (
	NotPTX     = 200
	InvalidPTX = 218
)

// ptxError is text Parse refuses, at a line, as the JIT would.
type ptxError struct {
	line int
	msg  string
	code int // NotPTX or InvalidPTX
}

func (e *ptxError) Error() string { return fmt.Sprintf("cudart: PTX line %d: %s", e.line, e.msg) }

// JITCode is the CUDA code the driver refuses PTX with for err, an error of
// Parse: NotPTX for text that is not PTX at all, InvalidPTX otherwise.
func JITCode(err error) int {
	var e *ptxError
	if errors.As(err, &e) {
		return e.code
	}
	return InvalidPTX
}

func ptxErrorf(line int, code int, format string, args ...any) error {
	return &ptxError{line: line, msg: fmt.Sprintf(format, args...), code: code}
}
