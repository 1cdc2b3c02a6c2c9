package cudarttest

import (
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/cudart"
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

// fault is an injected failure: the next calls matching its target (any
// call of the runtime when anyCall) count down left, and the one that brings
// it to zero fails; every fault fails each matching call.
type fault struct {
	target
	anyCall bool
	left    int
	every   bool
	code    cudart.Code
	why     string
}

// FailNth makes the nth call of the runtime from now fail with code,
// whatever its name (n counts from 1): the calls Calls lists, which cuBLAS's
// are not. The failed call changes nothing. An n below 1 is refused.
func (f *Fake) FailNth(n int, code cudart.Code) error {
	return f.addFault(fault{anyCall: true, left: n, code: code, why: fmt.Sprintf("injected by FailNth(%d)", n)})
}

// FailCall makes every call of the CUDA function name (e.g. "cudaMalloc",
// "cuMemMap") fail with code until ClearFaults. A name the fake never calls
// is refused with an error that lists the names it does.
//
// The fakes of libraries attached to the fake (Attach), cuBLAS's once
// cublas.Open has opened it on the fake, take faults too: name a library's
// function as its table does ("cublasGemmEx", "cublasCreate_v2") or as C
// code calls it ("cublasCreate"), and give as code the status it is to
// return (13, CUBLAS_STATUS_EXECUTION_FAILED, say). A library's call that
// fails so changes nothing, as the library's refusals do.
func (f *Fake) FailCall(name string, code cudart.Code) error {
	c, err := f.lookupCall(name)
	if err != nil {
		return err
	}
	return f.addFault(fault{target: c, every: true, code: code, why: fmt.Sprintf("injected by FailCall(%q)", name)})
}

// FailCallNth makes the nth call of the CUDA function name from now fail with
// code (n counts from 1). An unknown name or an n below 1 is refused, as by
// FailCall.
func (f *Fake) FailCallNth(name string, n int, code cudart.Code) error {
	c, err := f.lookupCall(name)
	if err != nil {
		return err
	}
	return f.addFault(fault{target: c, left: n, code: code, why: fmt.Sprintf("injected by FailCallNth(%q, %d)", name, n)})
}

// ClearFaults removes every injected failure that has not fired yet.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

func (f *Fake) addFault(x fault) error {
	if !x.every && x.left < 1 {
		return fmt.Errorf("cudarttest: %s: n counts from 1", x.why)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, x)
	return nil
}

// Calls returns the CUDA names of the calls made since NewFake or the last
// ResetCalls, in order, failed ones included.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.String()
	}
	return out
}

// ResetCalls empties the call log. Pending faults keep counting from where
// they were.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = f.calls[:0]
}

// enter logs call c and returns the injected failure it must report, if any.
// Every method calls it first, under f.mu, before it changes anything.
func (f *Fake) enter(c calls.Call) *failure {
	f.calls = append(f.calls, c)
	f.seq++
	return f.inject(func(x fault) bool { return x.anyCall || (x.lib == "" && x.call == c) })
}

// inject counts down the faults that match a call and returns the failure
// of the first that fires.
func (f *Fake) inject(match func(fault) bool) *failure {
	if len(f.faults) == 0 {
		return nil
	}
	var hit *failure
	kept := f.faults[:0]
	for _, x := range f.faults {
		if !match(x) {
			kept = append(kept, x)
			continue
		}
		if x.every {
			kept = append(kept, x)
			if hit == nil {
				hit = &failure{code: x.code, why: x.why}
			}
			continue
		}
		x.left--
		if x.left > 0 {
			kept = append(kept, x)
			continue
		}
		if hit == nil {
			hit = &failure{code: x.code, why: x.why}
		}
	}
	f.faults = kept
	return hit
}
