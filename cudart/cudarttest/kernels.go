package cudarttest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/ptx"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// KernelFunc is the Go implementation of a PTX kernel on the fake. It runs
// once per launch, standing in for every thread of the grid, with the fake's
// lock held: it reaches device memory through k only, and must not call the
// Fake's methods. An error it returns fails the launch with
// cudaErrorLaunchFailure.
type KernelFunc func(k *KernelContext) error

// kernelState is the fake's kernels: Go implementations by entry name, and
// the modules and functions handed out.
type kernelState struct {
	impls     map[string]KernelFunc
	modules   map[cudart.Module]*fakeModule
	functions map[cudart.Function]*fakeFunction
	next      uintptr // the last handle given out, modules and functions alike
	// heapUsed is the device-side malloc heap in use, and heapFixed whether
	// a kernel of a module that calls malloc has run, per device.
	heapUsed  map[int]uint64
	heapFixed map[int]bool
}

type fakeModule struct {
	ownedBy
	info ptx.Info
}

type fakeFunction struct {
	module cudart.Module
	entry  ptx.Entry
	impl   KernelFunc
	malloc bool // its module declares malloc
}

// RegisterKernel makes fn the implementation of the PTX entry point name on
// the fake: ModuleGetFunction finds an entry only once it is registered.
// Registering a name again replaces its implementation for functions looked
// up after.
func (f *Fake) RegisterKernel(name string, fn KernelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kern.impls == nil {
		f.kern.impls = make(map[string]KernelFunc)
	}
	f.kern.impls[name] = fn
}

func (k *kernelState) handle() uintptr {
	k.next += 0x10
	return 0x8_0000 + k.next
}

// ModuleLoadData is cuModuleLoadDataEx: the fake reads the PTX's header,
// its blocks and its .entry declarations (ptx.Parse), not its
// instructions, whose kernels RegisterKernel gives. What the JIT refuses of
// those parts is refused as the JIT does, with CUDA_ERROR_INVALID_PTX, or
// CUDA_ERROR_INVALID_IMAGE for text that does not start with .version, the
// message naming the line.
func (f *Fake) ModuleLoadData(device int, src string) (cudart.Module, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.CuModuleLoadDataEx, device)
	var info ptx.Info
	if x == nil {
		var err error
		if info, err = ptx.Parse(src); err != nil {
			x = fail(cudart.Code(ptx.JITCode(err)), "%v", err)
		}
	}
	if x != nil {
		return 0, x.err(calls.CuModuleLoadDataEx, "(%s of PTX) on device %d", bytesize.Format(uint64(len(src))), device)
	}
	if f.kern.modules == nil {
		f.kern.modules = make(map[cudart.Module]*fakeModule)
	}
	m := cudart.Module(f.kern.handle())
	f.kern.modules[m] = &fakeModule{ownedBy: ownedBy{device, f.birth()}, info: info}
	return m, nil
}

// ModuleGetFunction is cuModuleGetFunction: an entry the module's PTX
// declares and RegisterKernel implements; either missing is
// CUDA_ERROR_NOT_FOUND, saying which.
func (f *Fake) ModuleGetFunction(device int, m cudart.Module, name string) (cudart.Function, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mod, x := live(f, calls.CuModuleGetFunction, device, f.kern.modules, m, "module")
	var entry ptx.Entry
	if x == nil {
		var ok bool
		if entry, ok = mod.info.Entry(name); !ok {
			names := mod.info.Names()
			slices.Sort(names)
			x = fail(500, "the module's PTX has no .entry %q; it has %s", name, strings.Join(names, ", "))
		}
	}
	impl := f.kern.impls[name]
	if x == nil && impl == nil {
		x = fail(500, "no Go implementation of kernel %q: call RegisterKernel first", name)
	}
	if x != nil {
		return 0, x.err(calls.CuModuleGetFunction, "(module 0x%x, %q) on device %d", uintptr(m), name, device)
	}
	if f.kern.functions == nil {
		f.kern.functions = make(map[cudart.Function]*fakeFunction)
	}
	fn := cudart.Function(f.kern.handle())
	f.kern.functions[fn] = &fakeFunction{module: m, entry: entry, impl: impl, malloc: mod.info.CallsMalloc}
	return fn, nil
}

// ModuleUnload is cuModuleUnload: the module's functions are invalid after.
func (f *Fake) ModuleUnload(device int, m cudart.Module) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := destroy(f, calls.CuModuleUnload, device, f.kern.modules, m, "module"); err != nil {
		return err
	}
	for fn, ff := range f.kern.functions {
		if ff.module == m {
			delete(f.kern.functions, fn)
		}
	}
	return nil
}

// LaunchKernel is cuLaunchKernel: the function's KernelFunc runs on the
// stream, checked first as the binding checks a launch (ptx.CheckLaunch).
// A kernel that touches memory outside a live allocation fails with
// cudaErrorIllegalAddress.
func (f *Fake) LaunchKernel(device int, fn cudart.Function, grid, block cudart.Dim3, sharedMem uint32, s cudart.Stream, args ...cudart.KernelArg) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ff := f.kern.functions[fn]
	name := fmt.Sprintf("function 0x%x", uintptr(fn))
	if ff != nil {
		name = ff.entry.Name
	}
	qdev, x := f.streamCall(calls.CuLaunchKernel, device, s)
	if x == nil && ff == nil {
		x = fail(400, "not a function from cuModuleGetFunction, or its module was unloaded")
	}
	if x == nil {
		if mod := f.kern.modules[ff.module]; mod.device != device {
			x = fail(400, "kernel %s was loaded on device %d", name, mod.device)
		}
	}
	if x == nil {
		if err := ptx.CheckLaunch(ff.entry, [3]uint32{grid.X, grid.Y, grid.Z}, [3]uint32{block.X, block.Y, block.Z}, args); err != nil {
			x = invalid("%v", err)
		}
	}
	if x == nil {
		args = slices.Clone(args)
		x = f.enqueue(qdev, s, calls.CuLaunchKernel, func() *failure {
			return f.runKernel(device, ff, grid, block, sharedMem, args)
		})
	}
	if x != nil {
		return x.err(calls.CuLaunchKernel, "(%s, grid %s, block %s, %s shared, stream 0x%x, %v) on device %d", name, grid, block, bytesize.Format(uint64(sharedMem)), uintptr(s), args, device)
	}
	return nil
}

// runKernel runs ff's implementation over the grid.
func (f *Fake) runKernel(device int, ff *fakeFunction, grid, block cudart.Dim3, sharedMem uint32, args []cudart.KernelArg) *failure {
	if ff.malloc {
		if f.kern.heapFixed == nil {
			f.kern.heapFixed = make(map[int]bool)
		}
		f.kern.heapFixed[device] = true
	}
	k := &KernelContext{f: f, device: device, name: ff.entry.Name, grid: grid, block: block, shared: sharedMem, args: args}
	err := ff.impl(k)
	if k.fault != nil {
		return k.fault
	}
	if err != nil {
		return fail(719, "kernel %s: %v", ff.entry.Name, err)
	}
	return nil
}

// heapFixed refuses a change of the malloc heap size once a kernel that
// calls malloc has run on device, as CUDA documents for
// cudaLimitMallocHeapSize.
func (f *Fake) heapFixed(device int, l cudart.Limit) *failure {
	if l == cudart.LimitMallocHeapSize && f.kern.heapFixed[device] {
		return invalid("the malloc heap of device %d is fixed: a kernel that calls malloc has run", device)
	}
	return nil
}
