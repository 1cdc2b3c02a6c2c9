package cudarttest

import (
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// answers reports whether the fake makes call c: every call of cudart's table
// but those the binding makes for itself (the text of error codes).
func answers(c calls.Call) bool { return c.Capability() != calls.Binding }

// target is what an injected fault fails: a call of cudart's table, or a
// call of a library whose fake is attached (Attach).
type target struct {
	call    calls.Call
	lib     string // the library's name; empty for a call of cudart's
	libCall string
}

// lookupCall finds the call of a CUDA name, or of a library attached, that
// the fake answers. An unknown name is a mistake in the test (a fault that
// would never fire), so it is an error that lists the names the fake
// answers.
func (f *Fake) lookupCall(name string) (target, error) {
	c, err := calls.Lookup(name)
	if err == nil && answers(c) {
		return target{call: c}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.lookupLibraryCall(name); ok {
		return t, nil
	}
	var names []string
	for _, c := range calls.All() {
		if answers(c) {
			names = append(names, c.String())
		}
	}
	names = append(names, f.libraryCalls()...)
	return target{}, fmt.Errorf("cudarttest: the fake makes no call %q; it makes %s (a library's calls are among them once its binding is opened on the fake)", name, strings.Join(names, ", "))
}

// enter logs call c and returns the injected failure it must report, if any.
// Every method calls it first, under f.mu, before it changes anything.
func (f *Fake) enter(c calls.Call) *failure {
	f.calls = append(f.calls, c)
	f.seq++
	return f.inject(func(x fault) bool { return x.anyCall || (x.lib == "" && x.call == c) })
}
