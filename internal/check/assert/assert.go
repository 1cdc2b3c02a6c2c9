// Package assert is the part of testify's assert that the conformance suite
// uses, with the same names and arguments, on the standard library alone:
// the suite is a package users import into their tests, and it must not
// bring testify (and the YAML parser testify imports) into their modules.
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
	if equal(expected, actual) {
		return true
	}
	return fail(t, fmt.Sprintf("not equal:\n\texpected: %#v\n\tactual:   %#v", expected, actual), msgAndArgs)
}

// NotEqual asserts that expected and actual differ.
func NotEqual(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if !equal(expected, actual) {
		return true
	}
	return fail(t, fmt.Sprintf("should not be %#v", actual), msgAndArgs)
}

// True asserts that value is true.
func True(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	if value {
		return true
	}
	return fail(t, "should be true", msgAndArgs)
}

// False asserts that value is false.
func False(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	if !value {
		return true
	}
	return fail(t, "should be false", msgAndArgs)
}

// Zero asserts that i is its type's zero value.
func Zero(t T, i any, msgAndArgs ...any) bool {
	t.Helper()
	if i == nil || reflect.ValueOf(i).IsZero() {
		return true
	}
	return fail(t, fmt.Sprintf("should be zero, is %#v", i), msgAndArgs)
}

// NotZero asserts that i is not its type's zero value.
func NotZero(t T, i any, msgAndArgs ...any) bool {
	t.Helper()
	if i != nil && !reflect.ValueOf(i).IsZero() {
		return true
	}
	return fail(t, fmt.Sprintf("should not be zero, is %#v", i), msgAndArgs)
}

// NotEmpty asserts that object is neither nil, zero, nor of length 0.
func NotEmpty(t T, object any, msgAndArgs ...any) bool {
	t.Helper()
	if object != nil {
		v := reflect.ValueOf(object)
		switch v.Kind() {
		case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
			if v.Len() > 0 {
				return true
			}
		default:
			if !v.IsZero() {
				return true
			}
		}
	}
	return fail(t, fmt.Sprintf("should not be empty, is %#v", object), msgAndArgs)
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
	if err == nil {
		return true
	}
	return fail(t, fmt.Sprintf("unexpected error: %v", err), msgAndArgs)
}

// Error asserts that err is not nil.
func Error(t T, err error, msgAndArgs ...any) bool {
	t.Helper()
	if err != nil {
		return true
	}
	return fail(t, "an error is expected but got nil", msgAndArgs)
}

// ErrorIs asserts that errors.Is(err, target).
func ErrorIs(t T, err, target error, msgAndArgs ...any) bool {
	t.Helper()
	if errors.Is(err, target) {
		return true
	}
	return fail(t, fmt.Sprintf("error is not the one expected:\n\texpected: %v\n\tactual:   %v", target, err), msgAndArgs)
}

// ErrorAs asserts that errors.As(err, target).
func ErrorAs(t T, err error, target any, msgAndArgs ...any) bool {
	t.Helper()
	if errors.As(err, target) {
		return true
	}
	return fail(t, fmt.Sprintf("error %v is not a %s", err, reflect.TypeOf(target).Elem()), msgAndArgs)
}

// ErrorContains asserts that err is not nil and its text contains contains.
func ErrorContains(t T, err error, contains string, msgAndArgs ...any) bool {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), contains) {
		return true
	}
	return fail(t, fmt.Sprintf("error %v does not contain %q", err, contains), msgAndArgs)
}
