// Package record is a cudarttest.TB for the tests of what reports to one
// (the fake's checks at cleanup, the choice of runtime at Open): it keeps
// every report and runs the cleanups registered with it when asked. It uses
// the standard library alone, as the rest of internal/check does, so that
// the tests of cudarttest may use it.
package record

import "fmt"

// TB keeps what it is asked to report; its zero value is ready for use.
type TB struct {
	Logs, Errors, Fatals []string
	cleanups             []func()
}

// Helper does nothing: a report's line is not the point of a record.
func (r *TB) Helper() {}

// Cleanup keeps f for RunCleanups.
func (r *TB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// Errorf keeps the message in Errors.
func (r *TB) Errorf(format string, args ...any) {
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
}

// Fatalf keeps the message in Fatals; unlike testing's, it returns.
func (r *TB) Fatalf(format string, args ...any) {
	r.Fatals = append(r.Fatals, fmt.Sprintf(format, args...))
}

// Logf keeps the message in Logs.
func (r *TB) Logf(format string, args ...any) { r.Logs = append(r.Logs, fmt.Sprintf(format, args...)) }

// RunCleanups runs the cleanups registered since the last call, last first,
// as testing runs them when a test ends.
func (r *TB) RunCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}
