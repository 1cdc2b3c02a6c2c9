// Package opt is the option pattern every package of the module shares. A
// package declares its opaque Option as an interface embedding Option over its
// own config type: the one method is unexported here, so only Func
// implements it and no caller can make an option the package did not. Its
// With functions return Set or Func values, and its constructor applies them
// with Configure.
package opt

import "fmt"

// Option is what a package's Option interface embeds, for C its unexported
// config type.
type Option[C any] interface {
	apply(*C) error
}

// Func is an option made from a function that may refuse its value.
type Func[C any] func(*C) error

//lint:ignore U1000 called through Option's constraint in Configure, which staticcheck does not follow
func (f Func[C]) apply(c *C) error { return f(c) }

// Set is an option made from a setting that cannot fail.
func Set[C any](f func(*C)) Func[C] {
	return func(c *C) error {
		f(c)
		return nil
	}
}

// Configure applies opts to c in order, as Apply does.
func Configure[C any, O Option[C]](c *C, opts []O, invalid error) error {
	return Apply(opts, invalid, func(o O) error { return o.apply(c) })
}

// Apply calls apply on each of opts in order and returns the first error. A
// nil option is refused by its position, counted from 1, with an error
// wrapping invalid, the package's invalid-option sentinel, e.g. "pool:
// invalid option: option 2 of 3 is nil".
func Apply[O any](opts []O, invalid error, apply func(O) error) error {
	for i, o := range opts {
		if any(o) == nil {
			return fmt.Errorf("%w: option %d of %d is nil", invalid, i+1, len(opts))
		}
		if err := apply(o); err != nil {
			return err
		}
	}
	return nil
}
