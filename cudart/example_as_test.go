package cudart_test

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// wrapper is a runtime of a program's own around another, which it names
// with Unwrap.
type wrapper struct{ cudart.Full }

func (w wrapper) Unwrap() cudart.Runtime { return w.Full }

// A binding finds the fake inside a wrapper that says what it wraps, where a
// type assertion does not.
func ExampleAs() {
	var rt cudart.Runtime = wrapper{cudarttest.NewFake()}
	_, asserted := rt.(*cudarttest.Fake)
	_, found := cudart.As[*cudarttest.Fake](rt)
	fmt.Println(asserted, found)
	// Output: false true
}
