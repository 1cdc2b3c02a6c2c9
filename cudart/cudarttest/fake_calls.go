package cudarttest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart"
)

// callID numbers the CUDA calls the fake answers, so that the call log costs
// one byte a call however long a test runs.
type callID uint8

// One callID per method of cudart.Full, named after the CUDA function it
// stands for.
const (
	callGetDeviceCount callID = iota
	callMemGetInfo
	callMalloc
	callFree
	callMallocHost
	callFreeHost
	callMemcpy
	callMemset
	callDeviceSynchronize
	callStreamCreate
	callStreamSynchronize
	callStreamDestroy
	callMemcpyAsync
	callHostAlloc
	callHostGetDevicePointer
	callGetDeviceFlags
	callSetDeviceFlags
	callHostRegister
	callHostUnregister
	callMallocManaged
	callMemPrefetchAsync
	callMallocAsync
	callFreeAsync
	callMemPoolGetAttribute
	callMemPoolSetAttribute
	callSetDevice
	callDeviceGetLimit
	callDeviceSetLimit
	callRuntimeGetVersion
	callDriverGetVersion
	callGetDeviceProperties
	callMemGetAllocationGranularity
	callMemCreate
	callMemRelease
	callMemAddressReserve
	callMemAddressFree
	callMemMap
	callMemUnmap
	callMemSetAccess
	numCalls
)

var callNames = [numCalls]string{
	callGetDeviceCount:              "cudaGetDeviceCount",
	callMemGetInfo:                  "cudaMemGetInfo",
	callMalloc:                      "cudaMalloc",
	callFree:                        "cudaFree",
	callMallocHost:                  "cudaMallocHost",
	callFreeHost:                    "cudaFreeHost",
	callMemcpy:                      "cudaMemcpy",
	callMemset:                      "cudaMemset",
	callDeviceSynchronize:           "cudaDeviceSynchronize",
	callStreamCreate:                "cudaStreamCreate",
	callStreamSynchronize:           "cudaStreamSynchronize",
	callStreamDestroy:               "cudaStreamDestroy",
	callMemcpyAsync:                 "cudaMemcpyAsync",
	callHostAlloc:                   "cudaHostAlloc",
	callHostGetDevicePointer:        "cudaHostGetDevicePointer",
	callGetDeviceFlags:              "cudaGetDeviceFlags",
	callSetDeviceFlags:              "cudaSetDeviceFlags",
	callHostRegister:                "cudaHostRegister",
	callHostUnregister:              "cudaHostUnregister",
	callMallocManaged:               "cudaMallocManaged",
	callMemPrefetchAsync:            "cudaMemPrefetchAsync",
	callMallocAsync:                 "cudaMallocAsync",
	callFreeAsync:                   "cudaFreeAsync",
	callMemPoolGetAttribute:         "cudaMemPoolGetAttribute",
	callMemPoolSetAttribute:         "cudaMemPoolSetAttribute",
	callSetDevice:                   "cudaSetDevice",
	callDeviceGetLimit:              "cudaDeviceGetLimit",
	callDeviceSetLimit:              "cudaDeviceSetLimit",
	callRuntimeGetVersion:           "cudaRuntimeGetVersion",
	callDriverGetVersion:            "cudaDriverGetVersion",
	callGetDeviceProperties:         "cudaGetDeviceProperties",
	callMemGetAllocationGranularity: "cuMemGetAllocationGranularity",
	callMemCreate:                   "cuMemCreate",
	callMemRelease:                  "cuMemRelease",
	callMemAddressReserve:           "cuMemAddressReserve",
	callMemAddressFree:              "cuMemAddressFree",
	callMemMap:                      "cuMemMap",
	callMemUnmap:                    "cuMemUnmap",
	callMemSetAccess:                "cuMemSetAccess",
}

func (c callID) String() string { return callNames[c] }

// anyCall marks a fault that counts every call, whatever its name.
const anyCall = numCalls

// lookupCall finds the callID of a CUDA name. An unknown name is a mistake in
// the test (a fault that would never fire), so it panics with the names the
// fake knows.
func lookupCall(name string) callID {
	i := slices.Index(callNames[:], name)
	if i < 0 {
		panic(fmt.Sprintf("cudarttest: unknown CUDA call %q; the fake answers %s", name, strings.Join(callNames[:], ", ")))
	}
	return callID(i)
}

// fault is an injected failure: the next calls matching call count down left,
// and the one that brings it to zero fails; every fault fails each matching
// call.
type fault struct {
	call  callID
	left  int
	every bool
	code  cudart.Code
	why   string
}

// FailNth makes the nth call from now fail with code, whatever its name (n
// counts from 1). The failed call changes nothing.
func (f *Fake) FailNth(n int, code cudart.Code) {
	f.addFault(fault{call: anyCall, left: n, code: code, why: fmt.Sprintf("injected by FailNth(%d)", n)})
}

// FailCall makes every call of the CUDA function name (e.g. "cudaMalloc",
// "cuMemMap") fail with code until ClearFaults. It panics on a name the fake
// does not answer.
func (f *Fake) FailCall(name string, code cudart.Code) {
	f.addFault(fault{call: lookupCall(name), every: true, code: code, why: fmt.Sprintf("injected by FailCall(%q)", name)})
}

// FailCallNth makes the nth call of the CUDA function name from now fail with
// code (n counts from 1). It panics on a name the fake does not answer.
func (f *Fake) FailCallNth(name string, n int, code cudart.Code) {
	f.addFault(fault{call: lookupCall(name), left: n, code: code, why: fmt.Sprintf("injected by FailCallNth(%q, %d)", name, n)})
}

// ClearFaults removes every injected failure that has not fired yet.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

func (f *Fake) addFault(x fault) {
	if !x.every && x.left < 1 {
		panic(fmt.Sprintf("cudarttest: %s: n counts from 1", x.why))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, x)
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
func (f *Fake) enter(c callID) *failure {
	f.calls = append(f.calls, c)
	f.seq++
	if len(f.faults) == 0 {
		return nil
	}
	var hit *failure
	kept := f.faults[:0]
	for _, x := range f.faults {
		if x.call != anyCall && x.call != c {
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
