package assert

import (
	"fmt"
	"reflect"
)

// compare orders two numbers of the same kind of type: -1, 0 or 1, and
// false when they are not such numbers.
func compare(a, b any) (int, bool) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() || va.Type() != vb.Type() {
		return 0, false
	}
	switch va.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return sign(va.Int() > vb.Int(), va.Int() < vb.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return sign(va.Uint() > vb.Uint(), va.Uint() < vb.Uint()), true
	case reflect.Float32, reflect.Float64:
		return sign(va.Float() > vb.Float(), va.Float() < vb.Float()), true
	}
	return 0, false
}

func sign(greater, less bool) int {
	switch {
	case greater:
		return 1
	case less:
		return -1
	}
	return 0
}

// order asserts that compare(e1, e2) is one of want.
func order(t T, e1, e2 any, op string, msgAndArgs []any, want ...int) bool {
	t.Helper()
	c, ok := compare(e1, e2)
	if !ok {
		return fail(t, fmt.Sprintf("cannot compare %#v and %#v", e1, e2), msgAndArgs)
	}
	for _, w := range want {
		if c == w {
			return true
		}
	}
	return fail(t, fmt.Sprintf("%v is not %s %v", e1, op, e2), msgAndArgs)
}

// Greater asserts e1 > e2, two numbers of the same type.
func Greater(t T, e1, e2 any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, e1, e2, ">", msgAndArgs, 1)
}

// GreaterOrEqual asserts e1 >= e2.
func GreaterOrEqual(t T, e1, e2 any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, e1, e2, ">=", msgAndArgs, 1, 0)
}

// Less asserts e1 < e2.
func Less(t T, e1, e2 any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, e1, e2, "<", msgAndArgs, -1)
}

// LessOrEqual asserts e1 <= e2.
func LessOrEqual(t T, e1, e2 any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, e1, e2, "<=", msgAndArgs, -1, 0)
}

// Positive asserts e > 0.
func Positive(t T, e any, msgAndArgs ...any) bool {
	t.Helper()
	if e == nil {
		return fail(t, "nil is not a number", msgAndArgs)
	}
	zero := reflect.Zero(reflect.TypeOf(e)).Interface()
	return order(t, e, zero, ">", msgAndArgs, 1)
}
