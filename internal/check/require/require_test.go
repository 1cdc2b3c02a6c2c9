package require

import "testing"

// recorder is a T that counts reports and stops.
type recorder struct{ errs, stops int }

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errs++ }
func (r *recorder) FailNow()              { r.stops++ }

func TestRequireStopsOnlyOnFailure(t *testing.T) {
	var r recorder
	NoError(t, nil)
	Equal(&r, 1, 1)
	Greater(&r, 2, 1)
	Contains(&r, "ab", "b")
	Subset(&r, []int{1, 2}, []int{2})
	NotNil(&r, &r)
	if r != (recorder{}) {
		t.Fatalf("what holds reported %d and stopped %d times", r.errs, r.stops)
	}
	Equal(&r, 1, 2)
	Len(&r, []int{}, 1)
	Contains(&r, "ab", "c")
	Subset(&r, []int{1, 2}, []int{3})
	NotNil(&r, nil)
	if r != (recorder{errs: 5, stops: 5}) {
		t.Fatalf("five failures reported %d and stopped %d times", r.errs, r.stops)
	}
}
