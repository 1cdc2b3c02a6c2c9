package cudarttest

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// KernelContext is what a KernelFunc sees of its launch: the grid and block
// shapes, the arguments, the device's memory and its malloc heap. It is
// valid only while the KernelFunc runs.
//
// An argument read at the wrong size or index, or memory accessed outside a
// live allocation, fails the launch when the KernelFunc returns: with
// cudaErrorLaunchFailure for the argument, cudaErrorIllegalAddress for the
// memory, as a faulting kernel does on a GPU. The accessors then return
// zero values.
type KernelContext struct {
	f      *Fake
	device int
	name   string
	grid   cudart.Dim3
	block  cudart.Dim3
	shared uint32
	args   []cudart.KernelArg
	fault  *failure // the first fault, which fails the launch
}

// Grid is the launch's grid shape, in blocks.
func (k *KernelContext) Grid() cudart.Dim3 { return k.grid }

// Block is the launch's block shape, in threads.
func (k *KernelContext) Block() cudart.Dim3 { return k.block }

// Threads is the number of threads of the launch: every dimension of the
// grid and the block multiplied.
func (k *KernelContext) Threads() uint64 {
	g, b := k.grid, k.block
	return uint64(g.X) * uint64(g.Y) * uint64(g.Z) * uint64(b.X) * uint64(b.Y) * uint64(b.Z)
}

// SharedMem is the dynamic shared memory of the launch, in bytes.
func (k *KernelContext) SharedMem() uint32 { return k.shared }

// Device is the device ordinal the kernel runs on.
func (k *KernelContext) Device() int { return k.device }

// NumArgs is the number of arguments of the launch.
func (k *KernelContext) NumArgs() int { return len(k.args) }

// Arg is argument i as given to LaunchKernel.
func (k *KernelContext) Arg(i int) cudart.KernelArg {
	if i < 0 || i >= len(k.args) {
		k.faultf(719, "kernel %s reads argument %d of %d", k.name, i, len(k.args))
		return cudart.KernelArg{}
	}
	return k.args[i]
}

// bits is argument i's value, which must be size bytes.
func (k *KernelContext) bits(i int, size uint32) uint64 {
	a := k.Arg(i)
	if k.fault != nil {
		return 0
	}
	if a.Size() != size {
		k.faultf(719, "kernel %s reads argument %d, %s, as %d bytes", k.name, i, a, size)
		return 0
	}
	return a.Bits()
}

// Ptr is argument i as a device pointer.
func (k *KernelContext) Ptr(i int) cudart.DevicePtr { return cudart.DevicePtr(k.bits(i, 8)) }

// Int32 is argument i as an int32.
func (k *KernelContext) Int32(i int) int32 { return int32(uint32(k.bits(i, 4))) }

// Uint32 is argument i as a uint32.
func (k *KernelContext) Uint32(i int) uint32 { return uint32(k.bits(i, 4)) }

// Int64 is argument i as an int64.
func (k *KernelContext) Int64(i int) int64 { return int64(k.bits(i, 8)) }

// Uint64 is argument i as a uint64.
func (k *KernelContext) Uint64(i int) uint64 { return k.bits(i, 8) }

// Float32 is argument i as a float32.
func (k *KernelContext) Float32(i int) float32 { return math.Float32frombits(uint32(k.bits(i, 4))) }

// Float64 is argument i as a float64.
func (k *KernelContext) Float64(i int) float64 { return math.Float64frombits(k.bits(i, 8)) }

// Read copies len(b) bytes of device memory at p into b. It reports false,
// and the launch fails, when they are not all inside one live allocation.
func (k *KernelContext) Read(p cudart.DevicePtr, b []byte) bool {
	if k.fault != nil {
		return false
	}
	if x := k.f.memcpy(k.device, cudart.HostMem(b), cudart.DeviceMem(p, uint64(len(b))), cudart.DeviceToHost, true); x != nil {
		k.faultf(700, "kernel %s reads %d bytes at %s: %s", k.name, len(b), p, x.why)
		return false
	}
	return true
}

// Write copies b to device memory at p, as Read checks it.
func (k *KernelContext) Write(p cudart.DevicePtr, b []byte) bool {
	if k.fault != nil {
		return false
	}
	if x := k.f.memcpy(k.device, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice, true); x != nil {
		k.faultf(700, "kernel %s writes %d bytes at %s: %s", k.name, len(b), p, x.why)
		return false
	}
	return true
}

// Malloc is device-side malloc: n bytes from the device's malloc heap, or 0
// (NULL) when the heap, LimitMallocHeapSize bytes (8 MiB unless set), cannot
// hold them. The memory stays allocated until Free, and shows in CheckLeaks
// until then.
func (k *KernelContext) Malloc(n uint64) cudart.DevicePtr {
	f := k.f
	if k.fault != nil || n == 0 {
		return 0
	}
	limit := f.devs[k.device].limits[cudart.LimitMallocHeapSize]
	used := f.kern.heapUsed[k.device]
	if n > limit || used > limit-n {
		return 0
	}
	p, x := f.newRegion(calls.CuLaunchKernel, kindDevice, k.device, n)
	if x != nil {
		return 0
	}
	if f.kern.heapUsed == nil {
		f.kern.heapUsed = make(map[int]uint64)
	}
	f.kern.heapUsed[k.device] += n
	return p
}

// Free is device-side free of memory from Malloc on the kernel's device; 0
// is a no-op. Anything else fails the launch with cudaErrorIllegalAddress:
// memory from another device's heap too, as each context has its own heap
// and CUDA leaves a free into another undefined.
func (k *KernelContext) Free(p cudart.DevicePtr) {
	f := k.f
	if k.fault != nil || p == 0 {
		return
	}
	r := f.containing(uint64(p))
	if r == nil || r.base != uint64(p) || r.call != calls.CuLaunchKernel {
		k.faultf(700, "kernel %s frees %s, which device-side malloc did not return", k.name, p)
		return
	}
	if r.device != k.device {
		k.faultf(700, "kernel %s on device %d frees %s, from the malloc heap of device %d", k.name, k.device, p, r.device)
		return
	}
	f.kern.heapUsed[k.device] -= r.size
	f.release(r)
}

func (k *KernelContext) faultf(code cudart.Code, format string, args ...any) {
	if k.fault == nil {
		k.fault = &failure{code: code, why: fmt.Sprintf(format, args...)}
	}
}
