package assert

import (
	"fmt"
	"reflect"
	"strings"
)

// includes is testify's containsElement: a substring of a string, an
// element of a slice or array, or a key of a map; ok is false for a list
// of another kind.
func includes(list, element any) (found, ok bool) {
	v := reflect.ValueOf(list)
	switch v.Kind() {
	case reflect.String:
		e, isString := element.(string)
		return isString && strings.Contains(v.String(), e), true
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if equal(k.Interface(), element) {
				return true, true
			}
		}
		return false, true
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			if equal(v.Index(i).Interface(), element) {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// Contains asserts that s (a string, slice, array or map) contains
// contains (a substring, an element or a key).
func Contains(t T, s, contains any, msgAndArgs ...any) bool {
	t.Helper()
	found, ok := includes(s, contains)
	if !ok {
		return fail(t, fmt.Sprintf("%#v is not a string, slice, array or map", s), msgAndArgs)
	}
	if found {
		return true
	}
	return fail(t, fmt.Sprintf("%#v does not contain %#v", s, contains), msgAndArgs)
}

// NotContains asserts that s (a string, slice, array or map) does not
// contain contains.
func NotContains(t T, s, contains any, msgAndArgs ...any) bool {
	t.Helper()
	found, ok := includes(s, contains)
	if !ok {
		return fail(t, fmt.Sprintf("%#v is not a string, slice, array or map", s), msgAndArgs)
	}
	if !found {
		return true
	}
	return fail(t, fmt.Sprintf("%#v should not contain %#v", s, contains), msgAndArgs)
}

// Subset asserts that list (a slice, array or map) contains every element
// of subset (a slice or array).
func Subset(t T, list, subset any, msgAndArgs ...any) bool {
	t.Helper()
	v := reflect.ValueOf(subset)
	if k := v.Kind(); k != reflect.Array && k != reflect.Slice {
		return fail(t, fmt.Sprintf("%#v is not a slice or array", subset), msgAndArgs)
	}
	for i := range v.Len() {
		e := v.Index(i).Interface()
		found, ok := includes(list, e)
		if !ok {
			return fail(t, fmt.Sprintf("%#v is not a slice, array or map", list), msgAndArgs)
		}
		if !found {
			return fail(t, fmt.Sprintf("%#v does not contain %#v", list, e), msgAndArgs)
		}
	}
	return true
}
