package vmem

import "errors"

// undoLog records how to take back each CUDA call of a growth that
// succeeded, so that a growth that fails half way leaves nothing behind.
type undoLog []func() error

func (u *undoLog) push(step func() error) { *u = append(*u, step) }

// deferred holds cleanups that failed: unmapping, releasing or freeing what
// a rolled-back growth made, or an address range a Vector gave up. Each is
// retried before the next growth and at Close, so that a transient failure
// leaks nothing for good, and the owner never counts the memory as its own.
type deferred []func() error

// rollback takes back the steps of u, newest first. Every step is tried even
// when one fails (CUDA frees released memory once its last mapping goes,
// whichever comes first); the failed ones move to d and are reported.
func (d *deferred) rollback(u undoLog) error {
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		if err := u[i](); err != nil {
			errs = append(errs, err)
			*d = append(*d, u[i])
		}
	}
	if len(errs) > 0 {
		return errors.Join(append([]error{errRollback}, errs...)...)
	}
	return nil
}

// errRollback heads the errors of a rollback that did not complete.
var errRollback = errors.New("vmem: undoing the partial growth also failed; what is left is retried at the next growth and at Close")

// attempt makes one growth: the cleanups deferred so far are retried
// first, then growth runs, logging in u how to take back each CUDA call
// that succeeds. If growth fails, u is rolled back, and the error joins
// growth's and the rollback's.
func (d *deferred) attempt(growth func(u *undoLog) error) error {
	_ = d.retry()
	var u undoLog
	if err := growth(&u); err != nil {
		return errors.Join(err, d.rollback(u))
	}
	return nil
}

// later keeps a cleanup that failed, to retry.
func (d *deferred) later(step func() error) { *d = append(*d, step) }

// retry runs the deferred cleanups in the order they were deferred (an
// unmap before the free of its range), keeping those that fail again.
func (d *deferred) retry() error {
	var errs []error
	kept := (*d)[:0]
	for _, step := range *d {
		if err := step(); err != nil {
			errs = append(errs, err)
			kept = append(kept, step)
		}
	}
	clear((*d)[len(kept):])
	*d = kept
	return errors.Join(errs...)
}
