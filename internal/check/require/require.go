// Package require is package assert's assertions that stop the test: each
// calls t.FailNow when its assertion fails, as testify's require does.
package require

import "github.com/cudapool/cudapool/internal/check/assert"

// T is what the assertions need of a *testing.T.
type T interface {
	assert.T
	FailNow()
}

// Equal requires that expected and actual are equal.
func Equal(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Equal(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// NotEqual requires that expected and actual differ.
func NotEqual(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotEqual(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// True requires that value is true.
func True(t T, value bool, msgAndArgs ...any) {
	t.Helper()
	if !assert.True(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

// False requires that value is false.
func False(t T, value bool, msgAndArgs ...any) {
	t.Helper()
	if !assert.False(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

// Zero requires that i is its type's zero value.
func Zero(t T, i any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Zero(t, i, msgAndArgs...) {
		t.FailNow()
	}
}

// NotZero requires that i is not its type's zero value.
func NotZero(t T, i any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotZero(t, i, msgAndArgs...) {
		t.FailNow()
	}
}

// NotEmpty requires that object is neither nil, zero, nor of length 0.
func NotEmpty(t T, object any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotEmpty(t, object, msgAndArgs...) {
		t.FailNow()
	}
}

// Len requires that object has length n.
func Len(t T, object any, n int, msgAndArgs ...any) {
	t.Helper()
	if !assert.Len(t, object, n, msgAndArgs...) {
		t.FailNow()
	}
}

// NoError requires that err is nil.
func NoError(t T, err error, msgAndArgs ...any) {
	t.Helper()
	if !assert.NoError(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

// Error requires that err is not nil.
func Error(t T, err error, msgAndArgs ...any) {
	t.Helper()
	if !assert.Error(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorIs requires that errors.Is(err, target).
func ErrorIs(t T, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorIs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorAs requires that errors.As(err, target).
func ErrorAs(t T, err error, target any, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorAs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorContains requires that err is not nil and its text contains contains.
func ErrorContains(t T, err error, contains string, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorContains(t, err, contains, msgAndArgs...) {
		t.FailNow()
	}
}

// Greater requires e1 > e2, two numbers of the same type.
func Greater(t T, e1, e2 any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Greater(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// GreaterOrEqual requires e1 >= e2.
func GreaterOrEqual(t T, e1, e2 any, msgAndArgs ...any) {
	t.Helper()
	if !assert.GreaterOrEqual(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// Less requires e1 < e2.
func Less(t T, e1, e2 any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Less(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// LessOrEqual requires e1 <= e2.
func LessOrEqual(t T, e1, e2 any, msgAndArgs ...any) {
	t.Helper()
	if !assert.LessOrEqual(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// Positive requires e > 0.
func Positive(t T, e any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Positive(t, e, msgAndArgs...) {
		t.FailNow()
	}
}

// Contains requires that s (a string, slice, array or map) contains
// contains (a substring, an element or a key).
func Contains(t T, s, contains any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Contains(t, s, contains, msgAndArgs...) {
		t.FailNow()
	}
}

// Subset requires that list (a slice, array or map) contains every element
// of subset (a slice or array).
func Subset(t T, list, subset any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Subset(t, list, subset, msgAndArgs...) {
		t.FailNow()
	}
}

// NotNil requires that object is not nil.
func NotNil(t T, object any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotNil(t, object, msgAndArgs...) {
		t.FailNow()
	}
}
