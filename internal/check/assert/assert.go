// Package assert is the part of testify's assert that the conformance suite
// and the tests of cudarttest and conformance use, with the same names and
// arguments, on the standard library alone: those are packages users import
// into their tests, and they must not bring testify (and the YAML parser
// testify imports) into their modules.
// Each function reports a failure with t.Errorf and returns whether it
// held.
package assert

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// AnError is an error for tests to return where any error will do.
//
//lint:ignore ST1012 testify's name, kept so that tests move over unchanged
var AnError = errors.New("assert.AnError general error for testing")

// T is what the assertions need of a *testing.T.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

// fail reports what went wrong, then the caller's message: msgAndArgs is
// empty, one value printed with %+v, or a format and its arguments.
func fail(t T, what string, msgAndArgs []any) bool {
	t.Helper()
	if msg := message(msgAndArgs); msg != "" {
		what += "\n\tmessage: " + msg
	}
	t.Errorf("%s", what)
	return false
}

// held returns ok, and reports when it is false what went wrong (format
// and args, formatted only then) and the caller's message, as fail does.
func held(t T, ok bool, msgAndArgs []any, format string, args ...any) bool {
	t.Helper()
	if ok {
		return true
	}
	return fail(t, fmt.Sprintf(format, args...), msgAndArgs)
}

func message(msgAndArgs []any) string {
	switch len(msgAndArgs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%+v", msgAndArgs[0])
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}

// equal is testify's ObjectsAreEqual: byte slices by content, everything
// else by reflect.DeepEqual, so values of different types differ.
func equal(expected, actual any) bool {
	if e, ok := expected.([]byte); ok {
		a, ok := actual.([]byte)
		return ok && bytes.Equal(e, a)
	}
	return reflect.DeepEqual(expected, actual)
}

// Equal asserts that expected and actual are equal.
func Equal(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, equal(expected, actual), msgAndArgs, "not equal:\n\texpected: %#v\n\tactual:   %#v", expected, actual)
}

// NotEqual asserts that expected and actual differ.
func NotEqual(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, !equal(expected, actual), msgAndArgs, "should not be %#v", actual)
}

// True asserts that value is true.
func True(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, value, msgAndArgs, "should be true")
}

// False asserts that value is false.
func False(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, !value, msgAndArgs, "should be false")
}

// Zero asserts that i is its type's zero value.
func Zero(t T, i any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, i == nil || reflect.ValueOf(i).IsZero(), msgAndArgs, "should be zero, is %#v", i)
}

// NotZero asserts that i is not its type's zero value.
func NotZero(t T, i any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, i != nil && !reflect.ValueOf(i).IsZero(), msgAndArgs, "should not be zero, is %#v", i)
}

// empty says whether object is nil, zero, or of length 0.
func empty(object any) bool {
	if object == nil {
		return true
	}
	v := reflect.ValueOf(object)
	switch v.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	}
	return v.IsZero()
}

// Empty asserts that object is nil, zero, or of length 0.
func Empty(t T, object any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, empty(object), msgAndArgs, "should be empty, is %#v", object)
}

// NotEmpty asserts that object is neither nil, zero, nor of length 0.
func NotEmpty(t T, object any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, !empty(object), msgAndArgs, "should not be empty, is %#v", object)
}

// isNil is testify's: object is nil, or a nil pointer, slice, map, chan,
// func or interface held in a non-nil interface.
func isNil(object any) bool {
	if object == nil {
		return true
	}
	v := reflect.ValueOf(object)
	switch v.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// Nil asserts that object is nil.
func Nil(t T, object any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, isNil(object), msgAndArgs, "expected nil, got %#v", object)
}

// NotNil asserts that object is not nil.
func NotNil(t T, object any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, !isNil(object), msgAndArgs, "expected a value, got nil")
}

// Len asserts that object has length n.
func Len(t T, object any, n int, msgAndArgs ...any) bool {
	t.Helper()
	v := reflect.ValueOf(object)
	switch v.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		if v.Len() == n {
			return true
		}
		return fail(t, fmt.Sprintf("should have %d items, has %d", n, v.Len()), msgAndArgs)
	}
	return fail(t, fmt.Sprintf("%#v has no length", object), msgAndArgs)
}

// NoError asserts that err is nil.
func NoError(t T, err error, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, err == nil, msgAndArgs, "unexpected error: %v", err)
}

// Error asserts that err is not nil.
func Error(t T, err error, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, err != nil, msgAndArgs, "an error is expected but got nil")
}

// ErrorIs asserts that errors.Is(err, target).
func ErrorIs(t T, err, target error, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, errors.Is(err, target), msgAndArgs, "error is not the one expected:\n\texpected: %v\n\tactual:   %v", target, err)
}

// ErrorAs asserts that errors.As(err, target).
func ErrorAs(t T, err error, target any, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, errors.As(err, target), msgAndArgs, "error %v is not a %s", err, reflect.TypeOf(target).Elem())
}

// EqualError asserts that err is not nil and its text is errString.
func EqualError(t T, err error, errString string, msgAndArgs ...any) bool {
	t.Helper()
	if err == nil {
		return fail(t, fmt.Sprintf("an error %q is expected but got nil", errString), msgAndArgs)
	}
	if err.Error() == errString {
		return true
	}
	return fail(t, fmt.Sprintf("error message not equal:\n\texpected: %q\n\tactual:   %q", errString, err.Error()), msgAndArgs)
}

// ErrorContains asserts that err is not nil and its text contains contains.
func ErrorContains(t T, err error, contains string, msgAndArgs ...any) bool {
	t.Helper()
	return held(t, err != nil && strings.Contains(err.Error(), contains), msgAndArgs, "error %v does not contain %q", err, contains)
}
