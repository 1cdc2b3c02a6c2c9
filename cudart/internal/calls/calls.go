// Package calls is the one table of the CUDA functions cudart calls: each
// function's name, library, arguments and Result, and the methods of
// cudart.Full that make it. The binding loads and calls by it, the fake in
// cudarttest logs and fails calls by it, and the conformance suite checks
// both against it, so that a name cannot drift between them. It is not part
// of a user's API.
package calls

import (
	"fmt"
	"slices"
	"strings"
)

// Call is one CUDA function the binding calls, an entry of its one table:
// Open looks each up, the wrappers name it in their errors, and the fake in
// cudarttest logs and fails calls by it.
type Call uint8

// The CUDA functions the binding calls: runtime functions as the name after
// "cuda", driver functions as Cu and the name after "cu".
const (
	GetErrorName Call = iota
	GetErrorString
	RuntimeGetVersion
	DriverGetVersion
	GetDeviceCount
	SetDevice
	GetDeviceFlags
	SetDeviceFlags
	DeviceGetLimit
	DeviceSetLimit
	DeviceSynchronize
	MemGetInfo
	Malloc
	Free
	MallocHost
	FreeHost
	HostAlloc
	HostGetDevicePointer
	HostRegister
	HostUnregister
	Memcpy
	MemcpyAsync
	Memset
	MemsetAsync
	StreamCreate
	StreamSynchronize
	StreamQuery
	StreamDestroy
	StreamGetDevice
	MallocManaged
	MemPrefetchAsync
	MallocAsync
	FreeAsync
	DeviceGetDefaultMemPool
	MemPoolGetAttribute
	MemPoolSetAttribute
	EventCreate
	EventRecord
	StreamWaitEvent
	EventSynchronize
	EventQuery
	EventElapsedTime
	EventDestroy
	StreamBeginCapture
	StreamEndCapture
	GraphInstantiate
	GraphLaunch
	GraphExecDestroy
	GraphDestroy
	GraphGetNodes
	GraphNodeGetType
	DeviceReset
	DeviceCanAccessPeer
	PointerGetAttributes
	CuGetErrorName
	CuGetErrorString
	CuInit
	CuDeviceGet
	CuDeviceGetName
	CuMemGetAllocationGranularity
	CuMemCreate
	CuMemRelease
	CuMemAddressReserve
	CuMemAddressFree
	CuMemMap
	CuMemUnmap
	CuMemSetAccess
	CuModuleLoadDataEx
	CuModuleGetFunction
	CuModuleUnload
	CuLaunchKernel

	// Count is the number of calls: one more than the last.
	Count
)

// Library is the shared library a Call lives in.
type Library uint8

// The two libraries cudart.Open loads.
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

// The capabilities, one per interface of cudart.Full, and Binding for the calls the
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

// Arg is how the binding passes one C parameter.
type Arg uint8

const (
	ArgInt        Arg = iota // int, unsigned or an enum: 32 bits, cint for signed values
	ArgSize                  // size_t, unsigned long long or a handle: 64 bits
	ArgAddr                  // a device address, stream or memory pool: pointer-sized, never Go memory
	ArgMem                   // memory the binding passes by address: a Mem, host or device
	ArgOut                   // a pointer to a value CUDA writes, read back as an integer
	ArgLoc                   // a cudaMemLocation by value
	ArgParams                // a kernel's parameters: the address of the frame's array of pointers to their values
	ArgJITOptions            // the frame's CUjit_option array: the error log buffer and its size
	ArgJITValues             // the frame's JIT option values: the next Mem, the error log, and its length
)

// Result is what a C function returns.
type Result uint8

const (
	ResultRuntime Result = iota // cudaError_t
	ResultDriver                // CUresult
	ResultString                // const char *, static in the library
)

// callInfo is one row of the table.
type callInfo struct {
	name string
	lib  Library
	cap  Capability
	// methods are the methods of cudart.Full that make the call, each making its
	// calls in table order.
	methods []string
	// device: CUDA's current device (and its context) matters to the call,
	// so the binding selects the caller's device on the same OS thread first.
	device bool
	args   []Arg
	result Result
	// alt is looked up first and called instead when exported: the same
	// function under a name an older runtime gives it.
	alt string
}

// table is every CUDA function the binding calls, in Call order. The argument
// lists are the C parameters in order; cudaMemPrefetchAsync's is CUDA 13's,
// see cudart's MemPrefetchAsync. cudaGraphGetNodes reads its count as well as
// writing it, so the count is memory passed by address, not an out-parameter.
//
// A new call is a row here with its constant, the cudart method that makes it,
// the fake's and an assertion in the conformance suite, each in the file named
// for its capability's word (cudart/<word>.go, cudart/cudarttest/<word>.go,
// cudart/cudarttest/conformance/<word>.go; see cudart/files_test.go). A new
// method is also declared in its interface (cudart/runtime.go) and called once
// in the tests that check each method makes its rows' calls
// (cudart/library_test.go, cudart/cudarttest/methods_test.go), which fail
// until it is.
var table = [Count]callInfo{
	GetErrorName:            {"cudaGetErrorName", RuntimeLibrary, Binding, nil, false, []Arg{ArgInt}, ResultString, ""},
	GetErrorString:          {"cudaGetErrorString", RuntimeLibrary, Binding, nil, false, []Arg{ArgInt}, ResultString, ""},
	RuntimeGetVersion:       {"cudaRuntimeGetVersion", RuntimeLibrary, CapDevice, []string{"RuntimeVersion"}, false, []Arg{ArgOut}, ResultRuntime, ""},
	DriverGetVersion:        {"cudaDriverGetVersion", RuntimeLibrary, CapDevice, []string{"DriverVersion"}, false, []Arg{ArgOut}, ResultRuntime, ""},
	GetDeviceCount:          {"cudaGetDeviceCount", RuntimeLibrary, CapRuntime, []string{"DeviceCount"}, false, []Arg{ArgOut}, ResultRuntime, ""},
	SetDevice:               {"cudaSetDevice", RuntimeLibrary, CapDevice, []string{"SetDevice"}, false, []Arg{ArgInt}, ResultRuntime, ""},
	GetDeviceFlags:          {"cudaGetDeviceFlags", RuntimeLibrary, CapHostAllocator, []string{"GetDeviceFlags"}, true, []Arg{ArgOut}, ResultRuntime, ""},
	SetDeviceFlags:          {"cudaSetDeviceFlags", RuntimeLibrary, CapHostAllocator, []string{"SetDeviceFlags"}, true, []Arg{ArgInt}, ResultRuntime, ""},
	DeviceGetLimit:          {"cudaDeviceGetLimit", RuntimeLibrary, CapDevice, []string{"DeviceGetLimit"}, true, []Arg{ArgOut, ArgInt}, ResultRuntime, ""},
	DeviceSetLimit:          {"cudaDeviceSetLimit", RuntimeLibrary, CapDevice, []string{"DeviceSetLimit"}, true, []Arg{ArgInt, ArgSize}, ResultRuntime, ""},
	DeviceSynchronize:       {"cudaDeviceSynchronize", RuntimeLibrary, CapRuntime, []string{"DeviceSynchronize"}, true, nil, ResultRuntime, ""},
	MemGetInfo:              {"cudaMemGetInfo", RuntimeLibrary, CapRuntime, []string{"MemGetInfo"}, true, []Arg{ArgOut, ArgOut}, ResultRuntime, ""},
	Malloc:                  {"cudaMalloc", RuntimeLibrary, CapRuntime, []string{"Malloc"}, true, []Arg{ArgOut, ArgSize}, ResultRuntime, ""},
	Free:                    {"cudaFree", RuntimeLibrary, CapRuntime, []string{"Free"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	MallocHost:              {"cudaMallocHost", RuntimeLibrary, CapRuntime, []string{"MallocHost"}, true, []Arg{ArgOut, ArgSize}, ResultRuntime, ""},
	FreeHost:                {"cudaFreeHost", RuntimeLibrary, CapRuntime, []string{"FreeHost"}, false, []Arg{ArgMem}, ResultRuntime, ""},
	HostAlloc:               {"cudaHostAlloc", RuntimeLibrary, CapHostAllocator, []string{"HostAlloc"}, true, []Arg{ArgOut, ArgSize, ArgInt}, ResultRuntime, ""},
	HostGetDevicePointer:    {"cudaHostGetDevicePointer", RuntimeLibrary, CapHostAllocator, []string{"HostGetDevicePointer"}, true, []Arg{ArgOut, ArgMem, ArgInt}, ResultRuntime, ""},
	HostRegister:            {"cudaHostRegister", RuntimeLibrary, CapHostRegisterer, []string{"HostRegister"}, true, []Arg{ArgMem, ArgSize, ArgInt}, ResultRuntime, ""},
	HostUnregister:          {"cudaHostUnregister", RuntimeLibrary, CapHostRegisterer, []string{"HostUnregister"}, true, []Arg{ArgMem}, ResultRuntime, ""},
	Memcpy:                  {"cudaMemcpy", RuntimeLibrary, CapRuntime, []string{"Memcpy"}, true, []Arg{ArgMem, ArgMem, ArgSize, ArgInt}, ResultRuntime, ""},
	MemcpyAsync:             {"cudaMemcpyAsync", RuntimeLibrary, CapStreams, []string{"MemcpyAsync"}, true, []Arg{ArgMem, ArgMem, ArgSize, ArgInt, ArgAddr}, ResultRuntime, ""},
	Memset:                  {"cudaMemset", RuntimeLibrary, CapRuntime, []string{"Memset"}, true, []Arg{ArgAddr, ArgInt, ArgSize}, ResultRuntime, ""},
	MemsetAsync:             {"cudaMemsetAsync", RuntimeLibrary, CapStreams, []string{"MemsetAsync"}, true, []Arg{ArgAddr, ArgInt, ArgSize, ArgAddr}, ResultRuntime, ""},
	StreamCreate:            {"cudaStreamCreate", RuntimeLibrary, CapStreams, []string{"StreamCreate"}, true, []Arg{ArgOut}, ResultRuntime, ""},
	StreamSynchronize:       {"cudaStreamSynchronize", RuntimeLibrary, CapStreams, []string{"StreamSynchronize"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	StreamQuery:             {"cudaStreamQuery", RuntimeLibrary, CapStreams, []string{"StreamQuery"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	StreamDestroy:           {"cudaStreamDestroy", RuntimeLibrary, CapStreams, []string{"StreamDestroy"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	StreamGetDevice:         {"cudaStreamGetDevice", RuntimeLibrary, CapStreams, []string{"StreamDevice"}, true, []Arg{ArgAddr, ArgOut}, ResultRuntime, ""},
	MallocManaged:           {"cudaMallocManaged", RuntimeLibrary, CapManaged, []string{"MallocManaged"}, true, []Arg{ArgOut, ArgSize, ArgInt}, ResultRuntime, ""},
	MemPrefetchAsync:        {"cudaMemPrefetchAsync", RuntimeLibrary, CapManaged, []string{"MemPrefetchAsync"}, true, []Arg{ArgAddr, ArgSize, ArgLoc, ArgInt, ArgAddr}, ResultRuntime, "cudaMemPrefetchAsync_v2"},
	MallocAsync:             {"cudaMallocAsync", RuntimeLibrary, CapAsyncAllocator, []string{"MallocAsync"}, true, []Arg{ArgOut, ArgSize, ArgAddr}, ResultRuntime, ""},
	FreeAsync:               {"cudaFreeAsync", RuntimeLibrary, CapAsyncAllocator, []string{"FreeAsync"}, true, []Arg{ArgAddr, ArgAddr}, ResultRuntime, ""},
	DeviceGetDefaultMemPool: {"cudaDeviceGetDefaultMemPool", RuntimeLibrary, CapAsyncAllocator, []string{"MemPoolReleaseThreshold", "SetMemPoolReleaseThreshold"}, false, []Arg{ArgOut, ArgInt}, ResultRuntime, ""},
	MemPoolGetAttribute:     {"cudaMemPoolGetAttribute", RuntimeLibrary, CapAsyncAllocator, []string{"MemPoolReleaseThreshold"}, false, []Arg{ArgAddr, ArgInt, ArgOut}, ResultRuntime, ""},
	MemPoolSetAttribute:     {"cudaMemPoolSetAttribute", RuntimeLibrary, CapAsyncAllocator, []string{"SetMemPoolReleaseThreshold"}, false, []Arg{ArgAddr, ArgInt, ArgMem}, ResultRuntime, ""},
	EventCreate:             {"cudaEventCreate", RuntimeLibrary, CapEvents, []string{"EventCreate"}, true, []Arg{ArgOut}, ResultRuntime, ""},
	EventRecord:             {"cudaEventRecord", RuntimeLibrary, CapEvents, []string{"EventRecord"}, true, []Arg{ArgAddr, ArgAddr}, ResultRuntime, ""},
	StreamWaitEvent:         {"cudaStreamWaitEvent", RuntimeLibrary, CapEvents, []string{"StreamWaitEvent"}, true, []Arg{ArgAddr, ArgAddr, ArgInt}, ResultRuntime, ""},
	EventSynchronize:        {"cudaEventSynchronize", RuntimeLibrary, CapEvents, []string{"EventSynchronize"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	EventQuery:              {"cudaEventQuery", RuntimeLibrary, CapEvents, []string{"EventQuery"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	EventElapsedTime:        {"cudaEventElapsedTime", RuntimeLibrary, CapEvents, []string{"EventElapsedTime"}, true, []Arg{ArgOut, ArgAddr, ArgAddr}, ResultRuntime, ""},
	EventDestroy:            {"cudaEventDestroy", RuntimeLibrary, CapEvents, []string{"EventDestroy"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	StreamBeginCapture:      {"cudaStreamBeginCapture", RuntimeLibrary, CapGraphs, []string{"StreamBeginCapture"}, true, []Arg{ArgAddr, ArgInt}, ResultRuntime, ""},
	StreamEndCapture:        {"cudaStreamEndCapture", RuntimeLibrary, CapGraphs, []string{"StreamEndCapture"}, true, []Arg{ArgAddr, ArgOut}, ResultRuntime, ""},
	GraphInstantiate:        {"cudaGraphInstantiate", RuntimeLibrary, CapGraphs, []string{"GraphInstantiate"}, true, []Arg{ArgOut, ArgAddr, ArgSize}, ResultRuntime, ""},
	GraphLaunch:             {"cudaGraphLaunch", RuntimeLibrary, CapGraphs, []string{"GraphLaunch"}, true, []Arg{ArgAddr, ArgAddr}, ResultRuntime, ""},
	GraphExecDestroy:        {"cudaGraphExecDestroy", RuntimeLibrary, CapGraphs, []string{"GraphExecDestroy"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	GraphDestroy:            {"cudaGraphDestroy", RuntimeLibrary, CapGraphs, []string{"GraphDestroy"}, true, []Arg{ArgAddr}, ResultRuntime, ""},
	GraphGetNodes:           {"cudaGraphGetNodes", RuntimeLibrary, CapGraphs, []string{"GraphNodes"}, true, []Arg{ArgAddr, ArgMem, ArgMem}, ResultRuntime, ""},
	GraphNodeGetType:        {"cudaGraphNodeGetType", RuntimeLibrary, CapGraphs, []string{"GraphNodeType"}, true, []Arg{ArgAddr, ArgOut}, ResultRuntime, ""},
	DeviceReset:             {"cudaDeviceReset", RuntimeLibrary, CapDevice, []string{"DeviceReset"}, true, nil, ResultRuntime, ""},
	DeviceCanAccessPeer:     {"cudaDeviceCanAccessPeer", RuntimeLibrary, CapDevice, []string{"DeviceCanAccessPeer"}, false, []Arg{ArgOut, ArgInt, ArgInt}, ResultRuntime, ""},
	PointerGetAttributes:    {"cudaPointerGetAttributes", RuntimeLibrary, CapDevice, []string{"PointerAttributes"}, true, []Arg{ArgMem, ArgAddr}, ResultRuntime, ""},

	CuGetErrorName:                {"cuGetErrorName", DriverLibrary, Binding, nil, false, []Arg{ArgInt, ArgOut}, ResultDriver, ""},
	CuGetErrorString:              {"cuGetErrorString", DriverLibrary, Binding, nil, false, []Arg{ArgInt, ArgOut}, ResultDriver, ""},
	CuInit:                        {"cuInit", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []Arg{ArgInt}, ResultDriver, ""},
	CuDeviceGet:                   {"cuDeviceGet", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []Arg{ArgOut, ArgInt}, ResultDriver, ""},
	CuDeviceGetName:               {"cuDeviceGetName", DriverLibrary, CapDevice, []string{"DeviceName"}, false, []Arg{ArgMem, ArgInt, ArgInt}, ResultDriver, ""},
	CuMemGetAllocationGranularity: {"cuMemGetAllocationGranularity", DriverLibrary, CapVirtualMemory, []string{"MemGetAllocationGranularity", "MemGetExportableGranularity"}, true, []Arg{ArgOut, ArgMem, ArgInt}, ResultDriver, ""},
	CuMemCreate:                   {"cuMemCreate", DriverLibrary, CapVirtualMemory, []string{"MemCreate", "MemCreateExportable"}, true, []Arg{ArgOut, ArgSize, ArgMem, ArgSize}, ResultDriver, ""},
	CuMemRelease:                  {"cuMemRelease", DriverLibrary, CapVirtualMemory, []string{"MemRelease"}, true, []Arg{ArgSize}, ResultDriver, ""},
	CuMemAddressReserve:           {"cuMemAddressReserve", DriverLibrary, CapVirtualMemory, []string{"MemAddressReserve"}, true, []Arg{ArgOut, ArgSize, ArgSize, ArgAddr, ArgSize}, ResultDriver, ""},
	CuMemAddressFree:              {"cuMemAddressFree", DriverLibrary, CapVirtualMemory, []string{"MemAddressFree"}, true, []Arg{ArgAddr, ArgSize}, ResultDriver, ""},
	CuMemMap:                      {"cuMemMap", DriverLibrary, CapVirtualMemory, []string{"MemMap"}, true, []Arg{ArgAddr, ArgSize, ArgSize, ArgSize, ArgSize}, ResultDriver, ""},
	CuMemUnmap:                    {"cuMemUnmap", DriverLibrary, CapVirtualMemory, []string{"MemUnmap"}, true, []Arg{ArgAddr, ArgSize}, ResultDriver, ""},
	CuMemSetAccess:                {"cuMemSetAccess", DriverLibrary, CapVirtualMemory, []string{"MemSetAccess"}, true, []Arg{ArgAddr, ArgSize, ArgMem, ArgSize}, ResultDriver, ""},
	CuModuleLoadDataEx:            {"cuModuleLoadDataEx", DriverLibrary, CapKernels, []string{"ModuleLoadData"}, true, []Arg{ArgOut, ArgMem, ArgInt, ArgJITOptions, ArgJITValues}, ResultDriver, ""},
	CuModuleGetFunction:           {"cuModuleGetFunction", DriverLibrary, CapKernels, []string{"ModuleGetFunction"}, true, []Arg{ArgOut, ArgAddr, ArgMem}, ResultDriver, ""},
	CuModuleUnload:                {"cuModuleUnload", DriverLibrary, CapKernels, []string{"ModuleUnload"}, true, []Arg{ArgAddr}, ResultDriver, ""},
	CuLaunchKernel:                {"cuLaunchKernel", DriverLibrary, CapKernels, []string{"LaunchKernel"}, true, []Arg{ArgAddr, ArgInt, ArgInt, ArgInt, ArgInt, ArgInt, ArgInt, ArgInt, ArgAddr, ArgParams, ArgAddr}, ResultDriver, ""},
}

// optional are the calls a runtime the binding takes may lack, which Open
// loads without: cudaStreamGetDevice came with CUDA 12.8.
var optional = [Count]bool{StreamGetDevice: true}

// Optional reports whether Open loads a library that lacks c; the method
// that makes c then says what it can without it.
func (c Call) Optional() bool { return c < Count && optional[c] }

// String is the CUDA name, e.g. "cudaMalloc".
func (c Call) String() string {
	if c >= Count {
		return fmt.Sprintf("calls.Call(%d)", uint8(c))
	}
	return table[c].name
}

// Library is the library that exports c.
func (c Call) Library() Library { return table[c].lib }

// Capability is the interface whose methods make c; Binding for the calls
// no method makes.
func (c Call) Capability() Capability { return table[c].cap }

// Methods are the methods of cudart.Full that make c, e.g. [Malloc] for
// Malloc; none for the calls the binding makes for itself. A method makes
// its calls in the order of All.
func (c Call) Methods() []string { return slices.Clone(table[c].methods) }

// Device reports whether CUDA's current device matters to c, so that the
// binding selects the caller's device on the same OS thread first.
func (c Call) Device() bool { return table[c].device }

// Args are c's C parameters in order, as the binding passes them. The slice
// is the table's: read it, never change it.
func (c Call) Args() []Arg { return table[c].args }

// Result is what c's C function returns.
func (c Call) Result() Result { return table[c].result }

// Alt is the name looked up first and called instead of c's when the library
// exports it: the same function under a name an older runtime gives it; ""
// for none.
func (c Call) Alt() string { return table[c].alt }

// Of lists the calls method (a method of cudart.Full, e.g. "DeviceName") makes,
// in the order it makes them; none for a name that is not such a method.
func Of(method string) []Call {
	var out []Call
	for c := range Call(Count) {
		if slices.Contains(table[c].methods, method) {
			out = append(out, c)
		}
	}
	return out
}

// All lists every CUDA function the binding calls, in table order.
func All() []Call {
	out := make([]Call, Count)
	for i := range out {
		out[i] = Call(i)
	}
	return out
}

// Lookup finds the Call of a CUDA name. An unknown name is an error that
// lists every name the binding calls.
func Lookup(name string) (Call, error) {
	for c := range Call(Count) {
		if table[c].name == name {
			return c, nil
		}
	}
	names := make([]string, Count)
	for c := range names {
		names[c] = table[c].name
	}
	return 0, fmt.Errorf("cudart: %q is not a CUDA function the binding calls; it calls %s", name, strings.Join(names, ", "))
}
