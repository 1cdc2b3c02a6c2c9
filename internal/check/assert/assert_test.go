package assert

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// recorder is a T that keeps what the assertions report.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type myErr struct{}

func (myErr) Error() string { return "mine" }

func TestAssertions(t *testing.T) {
	wrapped := fmt.Errorf("open x: %w", fs.ErrNotExist)
	var mine myErr
	for _, c := range []struct {
		name string
		held func(T) bool
		fail func(T) bool
		text string // in the failure's report
	}{
		{"Equal", func(t T) bool { return Equal(t, []byte("ab"), []byte("ab")) }, func(t T) bool { return Equal(t, 1, int64(1)) }, "not equal"},
		{"NotEqual", func(t T) bool { return NotEqual(t, 1, 2) }, func(t T) bool { return NotEqual(t, "a", "a") }, "should not be"},
		{"True", func(t T) bool { return True(t, true) }, func(t T) bool { return True(t, false, "flag %d", 3) }, "message: flag 3"},
		{"False", func(t T) bool { return False(t, false) }, func(t T) bool { return False(t, true) }, "should be false"},
		{"Zero", func(t T) bool { return Zero(t, uint64(0)) }, func(t T) bool { return Zero(t, 5) }, "should be zero"},
		{"NotZero", func(t T) bool { return NotZero(t, uintptr(1)) }, func(t T) bool { return NotZero(t, "") }, "should not be zero"},
		{"NotEmpty", func(t T) bool { return NotEmpty(t, []int{1}) }, func(t T) bool { return NotEmpty(t, map[int]int{}) }, "should not be empty"},
		{"Len", func(t T) bool { return Len(t, "abc", 3) }, func(t T) bool { return Len(t, []int{1}, 2) }, "should have 2 items, has 1"},
		{"NoError", func(t T) bool { return NoError(t, nil) }, func(t T) bool { return NoError(t, wrapped, fs.ErrNotExist) }, "unexpected error: open x"},
		{"Error", func(t T) bool { return Error(t, wrapped) }, func(t T) bool { return Error(t, nil) }, "got nil"},
		{"ErrorIs", func(t T) bool { return ErrorIs(t, wrapped, fs.ErrNotExist) }, func(t T) bool { return ErrorIs(t, wrapped, fs.ErrExist) }, "not the one expected"},
		{"ErrorAs", func(t T) bool { return ErrorAs(t, fmt.Errorf("w: %w", myErr{}), &mine) }, func(t T) bool { return ErrorAs(t, wrapped, &mine) }, "is not a assert.myErr"},
		{"ErrorContains", func(t T) bool { return ErrorContains(t, wrapped, "open x") }, func(t T) bool { return ErrorContains(t, nil, "x") }, "does not contain"},
		{"Empty", func(t T) bool { return Empty(t, []string(nil)) }, func(t T) bool { return Empty(t, "x") }, `should be empty, is "x"`},
		{"Empty", func(t T) bool { return Empty(t, 0) }, func(t T) bool { return Empty(t, &mine) }, "should be empty"},
		{"Nil", func(t T) bool { return Nil(t, []byte(nil)) }, func(t T) bool { return Nil(t, []byte{}) }, "expected nil, got []byte{}"},
		{"Nil", func(t T) bool { return Nil(t, (*myErr)(nil)) }, func(t T) bool { return Nil(t, 0) }, "expected nil, got 0"},
		{"NotNil", func(t T) bool { return NotNil(t, &mine) }, func(t T) bool { return NotNil(t, error(nil)) }, "expected a value, got nil"},
		{"NotNil", func(t T) bool { return NotNil(t, 0) }, func(t T) bool { return NotNil(t, map[int]int(nil)) }, "got nil"},
		{"EqualError", func(t T) bool { return EqualError(t, wrapped, wrapped.Error()) }, func(t T) bool { return EqualError(t, wrapped, "open x") }, `expected: "open x"`},
		{"EqualError", func(t T) bool { return EqualError(t, AnError, "assert.AnError general error for testing") }, func(t T) bool { return EqualError(t, nil, "x") }, "got nil"},
		{"Contains", func(t T) bool { return Contains(t, "abc", "bc") }, func(t T) bool { return Contains(t, "abc", "ac") }, `"abc" does not contain "ac"`},
		{"Contains", func(t T) bool { return Contains(t, []int{1, 2}, 2) }, func(t T) bool { return Contains(t, []int{1, 2}, int64(2)) }, "does not contain"},
		{"Contains", func(t T) bool { return Contains(t, map[string]int{"k": 0}, "k") }, func(t T) bool { return Contains(t, 12, 1) }, "is not a string, slice, array or map"},
		{"NotContains", func(t T) bool { return NotContains(t, [2]string{"a", "b"}, "c") }, func(t T) bool { return NotContains(t, "abc", "b") }, `"abc" should not contain "b"`},
		{"Subset", func(t T) bool { return Subset(t, []int{1, 2, 3}, []int{3, 1}) }, func(t T) bool { return Subset(t, []int{1, 2}, []int{2, 4}) }, "does not contain 4"},
		{"Subset", func(t T) bool { return Subset(t, map[int]bool{1: true}, [1]int{1}) }, func(t T) bool { return Subset(t, []int{1}, 1) }, "is not a slice or array"},
		{"PanicsWithError", func(t T) bool { return PanicsWithError(t, "mine", func() { panic(myErr{}) }) }, func(t T) bool { return PanicsWithError(t, "mine", func() {}) }, "func returned"},
		{"PanicsWithError", func(t T) bool { return PanicsWithError(t, "", func() { panic(errors.New("")) }) }, func(t T) bool { return PanicsWithError(t, "mine", func() { panic("mine") }) }, `panicked with "mine"`},
		{"PanicsWithError", func(t T) bool { return PanicsWithError(t, AnError.Error(), func() { panic(AnError) }) }, func(t T) bool { return PanicsWithError(t, "x", func() { panic(myErr{}) }) }, `message "x"`},
		{"Greater", func(t T) bool { return Greater(t, 2, 1) }, func(t T) bool { return Greater(t, 1, 1) }, "1 is not > 1"},
		{"GreaterOrEqual", func(t T) bool { return GreaterOrEqual(t, uint64(1), uint64(1)) }, func(t T) bool { return GreaterOrEqual(t, 1.0, 2.0) }, "is not >="},
		{"Less", func(t T) bool { return Less(t, int64(-1), int64(0)) }, func(t T) bool { return Less(t, 1, int64(2)) }, "cannot compare"},
		{"LessOrEqual", func(t T) bool { return LessOrEqual(t, uint32(3), uint32(3)) }, func(t T) bool { return LessOrEqual(t, 4, 3) }, "4 is not <= 3"},
		{"Positive", func(t T) bool { return Positive(t, 1) }, func(t T) bool { return Positive(t, uint64(0)) }, "0 is not > 0"},
	} {
		var r recorder
		if !c.held(&r) || len(r.errs) != 0 {
			t.Errorf("%s: reported %q on what holds", c.name, r.errs)
		}
		if c.fail(&r) || len(r.errs) != 1 || !strings.Contains(r.errs[0], c.text) {
			t.Errorf("%s: reported %q, want one report containing %q", c.name, r.errs, c.text)
		}
	}
}
