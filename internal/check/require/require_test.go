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
	if r != (recorder{}) {
		t.Fatalf("what holds reported %d and stopped %d times", r.errs, r.stops)
	}
	Equal(&r, 1, 2)
	Len(&r, []int{}, 1)
	if r != (recorder{errs: 2, stops: 2}) {
		t.Fatalf("two failures reported %d and stopped %d times", r.errs, r.stops)
	}
}
