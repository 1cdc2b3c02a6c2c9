package cudart

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/ptx"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// jitLogBytes is the size of the error log cuModuleLoadDataEx fills.
const jitLogBytes = 8 << 10

// ModuleLoadData is cuModuleLoadDataEx of PTX text into device's primary
// context, asking the JIT compiler for its error log: a PTX error is an
// error wrapping ErrInvalidPTX whose message carries the log. The entry
// points and their parameter lists are read first (ptx.Parse), so that
// ModuleGetFunction and LaunchKernel can refuse an unknown kernel or wrong
// arguments before CUDA sees them; what ptx.Parse refuses never reaches the
// JIT, and is refused with the code the JIT gives it (ErrInvalidImage for
// text that is not PTX at all), the message naming the line.
func (l *library) ModuleLoadData(device int, src string) (Module, error) {
	if err := l.driverReady(calls.CuModuleLoadDataEx); err != nil {
		return 0, err
	}
	info, err := ptx.Parse(src)
	if err != nil {
		e := NewError(calls.CuModuleLoadDataEx.String()+fmt.Sprintf("(%s of PTX) on device %d", bytesize.Format(uint64(len(src))), device), Code(ptx.JITCode(err)))
		e.Message += ": " + err.Error()
		return 0, e
	}
	image := append([]byte(src), 0)
	log := make([]byte, jitLogBytes)
	r := l.callMem(calls.CuModuleLoadDataEx, device, [2]Mem{HostMem(image), HostMem(log)}, 2)
	if r.code != 0 {
		err := l.fail(calls.CuModuleLoadDataEx, r, "(%s of PTX, entries %s) on device %d", bytesize.Format(uint64(len(src))), strings.Join(info.Names(), ", "), device)
		if text, _, _ := bytes.Cut(log, []byte{0}); len(bytes.TrimSpace(text)) > 0 {
			var e *Error
			if errors.As(err, &e) {
				e.Message += "; JIT log: " + string(bytes.TrimSpace(text))
			}
		}
		return 0, err
	}
	m := Module(r.a)
	l.registry.addModule(m, device, info)
	return m, nil
}

// ModuleGetFunction is cuModuleGetFunction: the kernel called name in m. A
// name the module's PTX declares no .entry for is refused before the call
// with an error wrapping ErrNotFound that lists the entries it has.
func (l *library) ModuleGetFunction(device int, m Module, name string) (Function, error) {
	if err := l.driverReady(calls.CuModuleGetFunction); err != nil {
		return 0, err
	}
	entry, x := l.registry.entry(m, device, name)
	if x != nil {
		return 0, x.err(calls.CuModuleGetFunction, "(module 0x%x, %q) on device %d", uintptr(m), name, device)
	}
	r := l.callMem(calls.CuModuleGetFunction, device, [2]Mem{HostMem(append([]byte(name), 0))}, uintptr(m))
	if r.code != 0 {
		return 0, l.fail(calls.CuModuleGetFunction, r, "(module 0x%x, %q) on device %d", uintptr(m), name, device)
	}
	fn := Function(r.a)
	l.registry.addFunction(fn, m, entry)
	return fn, nil
}

// ModuleUnload is cuModuleUnload. The module's functions are invalid after
// it: LaunchKernel refuses them.
func (l *library) ModuleUnload(device int, m Module) error {
	if err := l.driverReady(calls.CuModuleUnload); err != nil {
		return err
	}
	if _, x := l.registry.module(m, device); x != nil {
		return x.err(calls.CuModuleUnload, "(module 0x%x) on device %d", uintptr(m), device)
	}
	if r := l.call(calls.CuModuleUnload, device, uintptr(m)); r.code != 0 {
		return l.fail(calls.CuModuleUnload, r, "(module 0x%x) on device %d", uintptr(m), device)
	}
	l.registry.removeModule(m)
	return nil
}

// LaunchKernel is cuLaunchKernel of fn on stream s with args, a grid of
// grid blocks of block threads and sharedMem bytes of dynamic shared
// memory. It refuses before CUDA sees them a function not from
// ModuleGetFunction (or whose module was unloaded), a stream StreamDestroy
// destroyed, a zero dimension, and arguments whose count or sizes differ
// from the kernel's parameters in its PTX; each error names the kernel.
// The launch is asynchronous: a fault in the kernel shows at the next
// synchronisation.
func (l *library) LaunchKernel(device int, fn Function, grid, block Dim3, sharedMem uint32, s Stream, args ...KernelArg) error {
	if err := l.driverReady(calls.CuLaunchKernel); err != nil {
		return err
	}
	name, x := l.registry.checkLaunch(fn, device, grid, block, args)
	if x == nil {
		x = l.registry.staleStream(s)
	}
	if x != nil {
		return x.err(calls.CuLaunchKernel, "(%s, grid %s, block %s, %s shared, stream 0x%x, %s) on device %d", name, grid, block, bytesize.Format(uint64(sharedMem)), uintptr(s), argList(args), device)
	}
	r := l.callLaunch(calls.CuLaunchKernel, device, args, uintptr(fn),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z), uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedMem), uintptr(s), 0)
	if r.code != 0 {
		return l.fail(calls.CuLaunchKernel, r, "(%s, grid %s, block %s, %s shared, stream 0x%x, %s) on device %d", name, grid, block, bytesize.Format(uint64(sharedMem)), uintptr(s), argList(args), device)
	}
	return nil
}

// argList formats args as a launch error shows them, e.g. "[ptr(0x1000)
// uint32(4)]". Formatting a copy keeps args itself from escaping, so that
// the caller's argument slice can live on its stack.
func argList(args []KernelArg) string { return fmt.Sprint(slices.Clone(args)) }

// refusal is a call refused before CUDA: the CUDA error it stands for and why.
type refusal struct {
	as  *Error
	why string
}

func (x *refusal) err(c calls.Call, format string, args ...any) error {
	return refused(c, x.as, x.why, format, args...)
}

// refused is the *Error of call c refused before it reached CUDA, with the
// code CUDA would have returned (as's) and why.
func refused(c calls.Call, as *Error, why, format string, args ...any) error {
	e := NewError(c.String()+fmt.Sprintf(format, args...), as.Code)
	e.Message += ": " + why
	return e
}

// entryNames lists a module's entries for an error message.
func entryNames(info ptx.Info) string {
	names := info.Names()
	if len(names) == 0 {
		return "it has none"
	}
	slices.Sort(names)
	return "it has " + strings.Join(names, ", ")
}
