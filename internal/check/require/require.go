// Package require is package assert's assertions that stop the test: each
// calls t.FailNow when its assertion fails, as testify's require does.
package require

import "github.com/cudapool/cudapool/internal/check/assert"

// T is what the assertions need of a *testing.T.
type T interface {
	assert.T
	FailNow()
}

// stop stops the test unless its assertion held.
func stop(t T, held bool) {
	if !held {
		t.FailNow()
	}
}

// stop1 and stop2 make check, an assertion of package assert on one or two
// values, stop the test when it fails: each assertion below is its
// namesake in package assert.
func stop1[A any](check func(assert.T, A, ...any) bool) func(T, A, ...any) {
	return func(t T, a A, msgAndArgs ...any) {
		t.Helper()
		stop(t, check(t, a, msgAndArgs...))
	}
}

func stop2[A, B any](check func(assert.T, A, B, ...any) bool) func(T, A, B, ...any) {
	return func(t T, a A, b B, msgAndArgs ...any) {
		t.Helper()
		stop(t, check(t, a, b, msgAndArgs...))
	}
}

// Equal requires that expected and actual are equal.
var Equal = stop2(assert.Equal)

// NotEqual requires that expected and actual differ.
var NotEqual = stop2(assert.NotEqual)

// True requires that value is true.
var True = stop1(assert.True)

// False requires that value is false.
var False = stop1(assert.False)

// Zero requires that i is its type's zero value.
var Zero = stop1(assert.Zero)

// NotZero requires that i is not its type's zero value.
var NotZero = stop1(assert.NotZero)

// NotEmpty requires that object is neither nil, zero, nor of length 0.
var NotEmpty = stop1(assert.NotEmpty)

// Len requires that object has length n.
var Len = stop2(assert.Len)

// NoError requires that err is nil.
var NoError = stop1(assert.NoError)

// Error requires that err is not nil.
var Error = stop1(assert.Error)

// ErrorIs requires that errors.Is(err, target).
var ErrorIs = stop2(assert.ErrorIs)

// ErrorAs requires that errors.As(err, target).
var ErrorAs = stop2(assert.ErrorAs)

// ErrorContains requires that err is not nil and its text contains contains.
var ErrorContains = stop2(assert.ErrorContains)

// Greater requires e1 > e2, two numbers of the same type.
var Greater = stop2(assert.Greater)

// GreaterOrEqual requires e1 >= e2.
var GreaterOrEqual = stop2(assert.GreaterOrEqual)

// Less requires e1 < e2.
var Less = stop2(assert.Less)

// LessOrEqual requires e1 <= e2.
var LessOrEqual = stop2(assert.LessOrEqual)

// Positive requires e > 0.
var Positive = stop1(assert.Positive)

// Contains requires that s (a string, slice, array or map) contains
// contains (a substring, an element or a key).
var Contains = stop2(assert.Contains)

// Subset requires that list (a slice, array or map) contains every element
// of subset (a slice or array).
var Subset = stop2(assert.Subset)

// NotNil requires that object is not nil.
var NotNil = stop1(assert.NotNil)
