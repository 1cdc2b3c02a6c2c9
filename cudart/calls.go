package cudart

import (
	"fmt"
	"slices"
	"strings"
)

// Call is one CUDA function the binding calls, an entry of its one table:
// Open looks each up, the wrappers name it in their errors, and the fake in
// cudarttest logs and fails calls by it.
type Call uint8

// The CUDA functions the binding calls: runtime functions as Call and the
// name after "cuda", driver functions as CallCu and the name after "cu".
const (
	CallGetErrorName Call = iota
	CallGetErrorString
	CallRuntimeGetVersion
	CallDriverGetVersion
	CallGetDeviceCount
	CallSetDevice
	CallGetDeviceFlags
	CallSetDeviceFlags
	CallDeviceGetLimit
	CallDeviceSetLimit
	CallDeviceSynchronize
	CallMemGetInfo
	CallMalloc
	CallFree
	CallMallocHost
	CallFreeHost
	CallHostAlloc
	CallHostGetDevicePointer
	CallHostRegister
	CallHostUnregister
	CallMemcpy
	CallMemcpyAsync
	CallMemset
	CallStreamCreate
	CallStreamSynchronize
	CallStreamDestroy
	CallMallocManaged
	CallMemPrefetchAsync
	CallMallocAsync
	CallFreeAsync
	CallDeviceGetDefaultMemPool
	CallMemPoolGetAttribute
	CallMemPoolSetAttribute
	CallEventCreate
	CallEventRecord
	CallStreamWaitEvent
	CallEventSynchronize
	CallEventQuery
	CallEventElapsedTime
	CallEventDestroy
	CallStreamBeginCapture
	CallStreamEndCapture
	CallGraphInstantiate
	CallGraphLaunch
	CallGraphExecDestroy
	CallGraphDestroy
	CallDeviceReset
	CallDeviceCanAccessPeer
	CallCuGetErrorName
	CallCuGetErrorString
	CallCuInit
	CallCuDeviceGet
	CallCuDeviceGetName
	CallCuMemGetAllocationGranularity
	CallCuMemCreate
	CallCuMemRelease
	CallCuMemAddressReserve
	CallCuMemAddressFree
	CallCuMemMap
	CallCuMemUnmap
	CallCuMemSetAccess
	CallCuModuleLoadDataEx
	CallCuModuleGetFunction
	CallCuModuleUnload
	CallCuLaunchKernel
	numCalls
)

// Library is the shared library a Call lives in.
type Library uint8

// The two libraries Open loads.
const (
	// RuntimeLibrary is libcudart; its functions return cudaError_t.
	RuntimeLibrary Library = iota
	// DriverLibrary is libcuda; its functions return CUresult.
	DriverLibrary
)

// String names the library as error messages do.
func (l Library) String() string {
	if l == DriverLibrary {
		return "CUDA driver"
	}
	return "CUDA runtime"
}

// Capability is the cudart interface whose methods make a Call.
type Capability uint8

// The capabilities, one per interface of Full, and Binding for the calls the
// binding makes for itself (the text of error codes), which no method makes.
const (
	Binding Capability = iota
	CapRuntime
	CapStreams
	CapHostAllocator
	CapHostRegisterer
	CapManaged
	CapAsyncAllocator
	CapDevice
	CapVirtualMemory
	CapKernels
	CapEvents
	CapGraphs
)

var capabilityNames = [...]string{"Binding", "Runtime", "Streams", "HostAllocator", "HostRegisterer", "Managed", "AsyncAllocator", "Device", "VirtualMemory", "Kernels", "Events", "Graphs"}

// String is the interface's name, e.g. "Streams".
func (c Capability) String() string { return capabilityNames[c] }

// arg is how the binding passes one C parameter.
type arg uint8

const (
	argInt        arg = iota // int, unsigned or an enum: 32 bits, cint for signed values
	argSize                  // size_t, unsigned long long or a handle: 64 bits
	argAddr                  // a device address, stream or memory pool: pointer-sized, never Go memory
	argMem                   // memory the binding passes by address: a Mem, host or device
	argOut                   // a pointer to a value CUDA writes, read back as an integer
	argLoc                   // a cudaMemLocation by value
	argParams                // a kernel's parameters: the address of the frame's array of pointers to their values
	argJITOptions            // the frame's CUjit_option array: the error log buffer and its size
	argJITValues             // the frame's JIT option values: the next Mem, the error log, and its length
)

// result is what a C function returns.
type result uint8

const (
	resultRuntime result = iota // cudaError_t
	resultDriver                // CUresult
	resultString                // const char *, static in the library
)

// callInfo is one row of the table.
type callInfo struct {
	name string
	lib  Library
	cap  Capability
	// methods are the methods of Full that make the call, each making its
	// calls in table order.
	methods []string
	// device: CUDA's current device (and its context) matters to the call,
	// so the binding selects the caller's device on the same OS thread first.
	device bool
	args   []arg
	result result
	// alt is looked up first and called instead when exported: the same
	// function under a name an older runtime gives it.
	alt string
}

// table is every CUDA function the binding calls, in Call order. The argument
// lists are the C parameters in order; cudaMemPrefetchAsync's is CUDA 13's,
// see Lib.MemPrefetchAsync.
//
// A new call is a row here with its constant, the Lib method that makes it
// (lib_*.go), the fake's (cudarttest/fake_*.go) and an assertion in the
// conformance suite (cudarttest/conformance/suite_*.go). A new method is also declared in
// its interface (runtime.go) and called once in the tests that check each
// method makes its rows' calls (lib_test.go, cudarttest/fake_methods_test.go), which
// fail until it is.
var table = [numCalls]callInfo{
	CallGetErrorName:            {"cudaGetErrorName", RuntimeLibrary, Binding, nil, false, []arg{argInt}, resultString, ""},
	CallGetErrorString:          {"cudaGetErrorString", RuntimeLibrary, Binding, nil, false, []arg{argInt}, resultString, ""},
	CallRuntimeGetVersion:       {"cudaRuntimeGetVersion", RuntimeLibrary, CapDevice, []string{"RuntimeVersion"}, false, []arg{argOut}, resultRuntime, ""},
	CallDriverGetVersion:        {"cudaDriverGetVersion", RuntimeLibrary, CapDevice, []string{"DriverVersion"}, false, []arg{argOut}, resultRuntime, ""},
	CallGetDeviceCount:          {"cudaGetDeviceCount", RuntimeLibrary, CapRuntime, []string{"DeviceCount"}, false, []arg{argOut}, resultRuntime, ""},
	CallSetDevice:               {"cudaSetDevice", RuntimeLibrary, CapDevice, []string{"SetDevice"}, false, []arg{argInt}, resultRuntime, ""},
	CallGetDeviceFlags:          {"cudaGetDeviceFlags", RuntimeLibrary, CapHostAllocator, []string{"GetDeviceFlags"}, true, []arg{argOut}, resultRuntime, ""},
	CallSetDeviceFlags:          {"cudaSetDeviceFlags", RuntimeLibrary, CapHostAllocator, []string{"SetDeviceFlags"}, true, []arg{argInt}, resultRuntime, ""},
	CallDeviceGetLimit:          {"cudaDeviceGetLimit", RuntimeLibrary, CapDevice, []string{"DeviceGetLimit"}, true, []arg{argOut, argInt}, resultRuntime, ""},
	CallDeviceSetLimit:          {"cudaDeviceSetLimit", RuntimeLibrary, CapDevice, []string{"DeviceSetLimit"}, true, []arg{argInt, argSize}, resultRuntime, ""},
	CallDeviceSynchronize:       {"cudaDeviceSynchronize", RuntimeLibrary, CapRuntime, []string{"DeviceSynchronize"}, true, nil, resultRuntime, ""},
	CallMemGetInfo:              {"cudaMemGetInfo", RuntimeLibrary, CapRuntime, []string{"MemGetInfo"}, true, []arg{argOut, argOut}, resultRuntime, ""},
	CallMalloc:                  {"cudaMalloc", RuntimeLibrary, CapRuntime, []string{"Malloc"}, true, []arg{argOut, argSize}, resultRuntime, ""},
	CallFree:                    {"cudaFree", RuntimeLibrary, CapRuntime, []string{"Free"}, true, []arg{argAddr}, resultRuntime, ""},
	CallMallocHost:              {"cudaMallocHost", RuntimeLibrary, CapRuntime, []string{"MallocHost"}, true, []arg{argOut, argSize}, resultRuntime, ""},
	CallFreeHost:                {"cudaFreeHost", RuntimeLibrary, CapRuntime, []string{"FreeHost"}, false, []arg{argMem}, resultRuntime, ""},
	CallHostAlloc:               {"cudaHostAlloc", RuntimeLibrary, CapHostAllocator, []string{"HostAlloc"}, true, []arg{argOut, argSize, argInt}, resultRuntime, ""},
	CallHostGetDevicePointer:    {"cudaHostGetDevicePointer", RuntimeLibrary, CapHostAllocator, []string{"HostGetDevicePointer"}, true, []arg{argOut, argMem, argInt}, resultRuntime, ""},
	CallHostRegister:            {"cudaHostRegister", RuntimeLibrary, CapHostRegisterer, []string{"HostRegister"}, true, []arg{argMem, argSize, argInt}, resultRuntime, ""},
	CallHostUnregister:          {"cudaHostUnregister", RuntimeLibrary, CapHostRegisterer, []string{"HostUnregister"}, true, []arg{argMem}, resultRuntime, ""},
	CallMemcpy:                  {"cudaMemcpy", RuntimeLibrary, CapRuntime, []string{"Memcpy"}, true, []arg{argMem, argMem, argSize, argInt}, resultRuntime, ""},
	CallMemcpyAsync:             {"cudaMemcpyAsync", RuntimeLibrary, CapStreams, []string{"MemcpyAsync"}, true, []arg{argMem, argMem, argSize, argInt, argAddr}, resultRuntime, ""},
	CallMemset:                  {"cudaMemset", RuntimeLibrary, CapRuntime, []string{"Memset"}, true, []arg{argAddr, argInt, argSize}, resultRuntime, ""},
	CallStreamCreate:            {"cudaStreamCreate", RuntimeLibrary, CapStreams, []string{"StreamCreate"}, true, []arg{argOut}, resultRuntime, ""},
	CallStreamSynchronize:       {"cudaStreamSynchronize", RuntimeLibrary, CapStreams, []string{"StreamSynchronize"}, true, []arg{argAddr}, resultRuntime, ""},
	CallStreamDestroy:           {"cudaStreamDestroy", RuntimeLibrary, CapStreams, []string{"StreamDestroy"}, true, []arg{argAddr}, resultRuntime, ""},
	CallMallocManaged:           {"cudaMallocManaged", RuntimeLibrary, CapManaged, []string{"MallocManaged"}, true, []arg{argOut, argSize, argInt}, resultRuntime, ""},
	CallMemPrefetchAsync:        {"cudaMemPrefetchAsync", RuntimeLibrary, CapManaged, []string{"MemPrefetchAsync"}, true, []arg{argAddr, argSize, argLoc, argInt, argAddr}, resultRuntime, "cudaMemPrefetchAsync_v2"},
	CallMallocAsync:             {"cudaMallocAsync", RuntimeLibrary, CapAsyncAllocator, []string{"MallocAsync"}, true, []arg{argOut, argSize, argAddr}, resultRuntime, ""},
	CallFreeAsync:               {"cudaFreeAsync", RuntimeLibrary, CapAsyncAllocator, []string{"FreeAsync"}, true, []arg{argAddr, argAddr}, resultRuntime, ""},
	CallDeviceGetDefaultMemPool: {"cudaDeviceGetDefaultMemPool", RuntimeLibrary, CapAsyncAllocator, []string{"MemPoolReleaseThreshold", "SetMemPoolReleaseThreshold"}, false, []arg{argOut, argInt}, resultRuntime, ""},
	CallMemPoolGetAttribute:     {"cudaMemPoolGetAttribute", RuntimeLibrary, CapAsyncAllocator, []string{"MemPoolReleaseThreshold"}, false, []arg{argAddr, argInt, argOut}, resultRuntime, ""},
	CallMemPoolSetAttribute:     {"cudaMemPoolSetAttribute", RuntimeLibrary, CapAsyncAllocator, []string{"SetMemPoolReleaseThreshold"}, false, []arg{argAddr, argInt, argMem}, resultRuntime, ""},
	CallEventCreate:             {"cudaEventCreate", RuntimeLibrary, CapEvents, []string{"EventCreate"}, true, []arg{argOut}, resultRuntime, ""},
	CallEventRecord:             {"cudaEventRecord", RuntimeLibrary, CapEvents, []string{"EventRecord"}, true, []arg{argAddr, argAddr}, resultRuntime, ""},
	CallStreamWaitEvent:         {"cudaStreamWaitEvent", RuntimeLibrary, CapEvents, []string{"StreamWaitEvent"}, true, []arg{argAddr, argAddr, argInt}, resultRuntime, ""},
	CallEventSynchronize:        {"cudaEventSynchronize", RuntimeLibrary, CapEvents, []string{"EventSynchronize"}, true, []arg{argAddr}, resultRuntime, ""},
	CallEventQuery:              {"cudaEventQuery", RuntimeLibrary, CapEvents, []string{"EventQuery"}, true, []arg{argAddr}, resultRuntime, ""},
	CallEventElapsedTime:        {"cudaEventElapsedTime", RuntimeLibrary, CapEvents, []string{"EventElapsedTime"}, true, []arg{argOut, argAddr, argAddr}, resultRuntime, ""},
	CallEventDestroy:            {"cudaEventDestroy", RuntimeLibrary, CapEvents, []string{"EventDestroy"}, true, []arg{argAddr}, resultRuntime, ""},
	CallStreamBeginCapture:      {"cudaStreamBeginCapture", RuntimeLibrary, CapGraphs, []string{"StreamBeginCapture"}, true, []arg{argAddr, argInt}, resultRuntime, ""},
	CallStreamEndCapture:        {"cudaStreamEndCapture", RuntimeLibrary, CapGraphs, []string{"StreamEndCapture"}, true, []arg{argAddr, argOut}, resultRuntime, ""},
	CallGraphInstantiate:        {"cudaGraphInstantiate", RuntimeLibrary, CapGraphs, []string{"GraphInstantiate"}, true, []arg{argOut, argAddr, argSize}, resultRuntime, ""},
	CallGraphLaunch:             {"cudaGraphLaunch", RuntimeLibrary, CapGraphs, []string{"GraphLaunch"}, true, []arg{argAddr, argAddr}, resultRuntime, ""},
	CallGraphExecDestroy:        {"cudaGraphExecDestroy", RuntimeLibrary, CapGraphs, []string{"GraphExecDestroy"}, true, []arg{argAddr}, resultRuntime, ""},
	CallGraphDestroy:            {"cudaGraphDestroy", RuntimeLibrary, CapGraphs, []string{"GraphDestroy"}, true, []arg{argAddr}, resultRuntime, ""},
	CallDeviceReset:             {"cudaDeviceReset", RuntimeLibrary, CapDevice, []string{"DeviceReset"}, true, nil, resultRuntime, ""},
	CallDeviceCanAccessPeer:     {"cudaDeviceCanAccessPeer", RuntimeLibrary, CapDevice, []string{"DeviceCanAccessPeer"}, false, []arg{argOut, argInt, argInt}, resultRuntime, ""},

	CallCuGetErrorName:                {"cuGetErrorName", DriverLibrary, Binding, nil, false, []arg{argInt, argOut}, resultDriver, ""},
	CallCuGetErrorString:              {"cuGetErrorString", DriverLibrary, Binding, nil, false, []arg{argInt, argOut}, resultDriver, ""},
	CallCuInit:                        {"cuInit", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []arg{argInt}, resultDriver, ""},
	CallCuDeviceGet:                   {"cuDeviceGet", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []arg{argOut, argInt}, resultDriver, ""},
	CallCuDeviceGetName:               {"cuDeviceGetName", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []arg{argMem, argInt, argInt}, resultDriver, ""},
	CallCuMemGetAllocationGranularity: {"cuMemGetAllocationGranularity", DriverLibrary, CapVirtualMemory, []string{"MemGetAllocationGranularity"}, true, []arg{argOut, argMem, argInt}, resultDriver, ""},
	CallCuMemCreate:                   {"cuMemCreate", DriverLibrary, CapVirtualMemory, []string{"MemCreate"}, true, []arg{argOut, argSize, argMem, argSize}, resultDriver, ""},
	CallCuMemRelease:                  {"cuMemRelease", DriverLibrary, CapVirtualMemory, []string{"MemRelease"}, true, []arg{argSize}, resultDriver, ""},
	CallCuMemAddressReserve:           {"cuMemAddressReserve", DriverLibrary, CapVirtualMemory, []string{"MemAddressReserve"}, true, []arg{argOut, argSize, argSize, argAddr, argSize}, resultDriver, ""},
	CallCuMemAddressFree:              {"cuMemAddressFree", DriverLibrary, CapVirtualMemory, []string{"MemAddressFree"}, true, []arg{argAddr, argSize}, resultDriver, ""},
	CallCuMemMap:                      {"cuMemMap", DriverLibrary, CapVirtualMemory, []string{"MemMap"}, true, []arg{argAddr, argSize, argSize, argSize, argSize}, resultDriver, ""},
	CallCuMemUnmap:                    {"cuMemUnmap", DriverLibrary, CapVirtualMemory, []string{"MemUnmap"}, true, []arg{argAddr, argSize}, resultDriver, ""},
	CallCuMemSetAccess:                {"cuMemSetAccess", DriverLibrary, CapVirtualMemory, []string{"MemSetAccess"}, true, []arg{argAddr, argSize, argMem, argSize}, resultDriver, ""},
	CallCuModuleLoadDataEx:            {"cuModuleLoadDataEx", DriverLibrary, CapKernels, []string{"ModuleLoadData"}, true, []arg{argOut, argMem, argInt, argJITOptions, argJITValues}, resultDriver, ""},
	CallCuModuleGetFunction:           {"cuModuleGetFunction", DriverLibrary, CapKernels, []string{"ModuleGetFunction"}, true, []arg{argOut, argAddr, argMem}, resultDriver, ""},
	CallCuModuleUnload:                {"cuModuleUnload", DriverLibrary, CapKernels, []string{"ModuleUnload"}, true, []arg{argAddr}, resultDriver, ""},
	CallCuLaunchKernel:                {"cuLaunchKernel", DriverLibrary, CapKernels, []string{"LaunchKernel"}, true, []arg{argAddr, argInt, argInt, argInt, argInt, argInt, argInt, argInt, argAddr, argParams, argAddr}, resultDriver, ""},
}

// String is the CUDA name, e.g. "cudaMalloc".
func (c Call) String() string {
	if c >= numCalls {
		return fmt.Sprintf("cudart.Call(%d)", uint8(c))
	}
	return table[c].name
}

// Library is the library that exports c.
func (c Call) Library() Library { return table[c].lib }

// Capability is the interface whose methods make c; Binding for the calls
// no method makes.
func (c Call) Capability() Capability { return table[c].cap }

// Methods are the methods of Full that make c, e.g. [Malloc] for
// CallMalloc; none for the calls the binding makes for itself. A method makes
// its calls in the order of Calls.
func (c Call) Methods() []string { return slices.Clone(table[c].methods) }

// CallsOf lists the calls method (a method of Full, e.g. "DeviceName") makes,
// in the order it makes them; none for a name that is not such a method.
func CallsOf(method string) []Call {
	var out []Call
	for c := range Call(numCalls) {
		if slices.Contains(table[c].methods, method) {
			out = append(out, c)
		}
	}
	return out
}

// Calls lists every CUDA function the binding calls, in table order.
func Calls() []Call {
	out := make([]Call, numCalls)
	for i := range out {
		out[i] = Call(i)
	}
	return out
}

// LookupCall finds the Call of a CUDA name. An unknown name is an error that
// lists every name the binding calls.
func LookupCall(name string) (Call, error) {
	for c := range Call(numCalls) {
		if table[c].name == name {
			return c, nil
		}
	}
	names := make([]string, numCalls)
	for c := range names {
		names[c] = table[c].name
	}
	return 0, fmt.Errorf("cudart: %q is not a CUDA function the binding calls; it calls %s", name, strings.Join(names, ", "))
}
