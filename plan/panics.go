package plan

import (
	"fmt"
	"runtime/debug"
)

// guarded runs f on a new goroutine and sends on done, once f has
// returned, nil or f's panic as an error. Left alone, a panic on a
// goroutine the planner started would end the process, and the caller
// could not recover it.
func guarded(f func(), done chan<- error) {
	go func() {
		var err error
		defer func() { done <- err }()
		defer func() {
			if v := recover(); v != nil {
				err = recovered(v)
			}
		}()
		f()
	}()
}

// recovered is the error for a panic of value v. It is called while the
// panicking frames are still on the stack, so the stack it records shows
// where the panic happened.
func recovered(v any) error {
	stack := debug.Stack()
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: a planner goroutine panicked: %w\n%s", ErrInternal, err, stack)
	}
	return fmt.Errorf("%w: a planner goroutine panicked: %v\n%s", ErrInternal, v, stack)
}
