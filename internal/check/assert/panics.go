package assert

import "fmt"

// didPanic runs f and says whether it panicked, and with what.
func didPanic(f func()) (panicked bool, value any) {
	panicked = true
	defer func() { value = recover() }()
	f()
	panicked = false
	return
}

// PanicsWithError asserts that f panics with an error whose text is
// errString.
func PanicsWithError(t T, errString string, f func(), msgAndArgs ...any) bool {
	t.Helper()
	panicked, value := didPanic(f)
	if !panicked {
		return fail(t, fmt.Sprintf("func returned, should panic with error message %q", errString), msgAndArgs)
	}
	if err, ok := value.(error); ok && err.Error() == errString {
		return true
	}
	return fail(t, fmt.Sprintf("func should panic with error message %q, panicked with %#v", errString, value), msgAndArgs)
}
