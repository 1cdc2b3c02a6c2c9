package cudarttest

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

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
// "cuMemMap") fail with code until ClearFaults: a sentinel's, as
// cudart.ErrMemoryAllocation.Code, so that the error matches it with
// errors.Is. A name the fake never calls is refused with an error that
// lists the names it does.
//
// The fakes of libraries attached to the fake (Attach), cuBLAS's once
// cublas.Open has opened it on the fake, take faults too: name a library's
// function as its table does ("cublasGemmEx", "cublasCreate_v2") or as C
// code calls it ("cublasCreate"), and give as code the status it is to
// return: cudart.Code(cublas.ErrExecutionFailed.Status), which is 13,
// CUBLAS_STATUS_EXECUTION_FAILED. A library's call that
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

// FailAsync makes the next asynchronous work on device fault when it runs,
// as a kernel that faults does on CUDA: the work does nothing, and the
// synchronisation point that runs it (StreamSynchronize, DeviceSynchronize,
// a synchronous copy, Free) returns code, as does every later call on the
// device until DeviceReset, which then leaves the device lost (see
// DeviceReset). Code must be one CUDA makes sticky: cudaErrorIllegalAddress
// (700), cudaErrorHardwareStackError (714), cudaErrorIllegalInstruction
// (715), cudaErrorMisalignedAddress (716), cudaErrorInvalidAddressSpace
// (717), cudaErrorInvalidPc (718) or cudaErrorLaunchFailure (719).
func (f *Fake) FailAsync(device int, code cudart.Code) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if device < 0 || device >= len(f.devs) {
		return fmt.Errorf("cudarttest: FailAsync(%d, %d): no device %d of %d", device, code, device, len(f.devs))
	}
	if !slices.Contains(stickyCodes, code) {
		return fmt.Errorf("cudarttest: FailAsync(%d, %d): want a code CUDA makes sticky, one of %v", device, code, stickyCodes)
	}
	f.devs[device].asyncFault = code
	return nil
}

// stickyCodes are the codes FailAsync accepts: the faults of work on the
// device that CUDA makes sticky and documents as fatal to the process
// ("the process must be terminated and relaunched"): an illegal address,
// a hardware stack error, an illegal instruction, a misaligned address, an
// invalid address space, an invalid program counter and a launch failure.
var stickyCodes = []cudart.Code{700, 714, 715, 716, 717, 718, 719}
