// Package opt applies a package's options the one way every package of the
// module does: in order, refusing a nil option by its position. Each package
// keeps its own opaque Option interface, whose unexported apply method no
// other package can implement; this package only runs the loop.
package opt

import "fmt"

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
