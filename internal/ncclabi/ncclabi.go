// Package ncclabi is the machinery of the NCCL binding: the one table of the
// NCCL functions package nccl calls, NCCL's numbers (results, data types,
// reduction operations, the unique id and the configuration's layout), the
// frame a call's arguments travel in, and the Backend that runs a batch of
// calls, libnccl through internal/dl (load.go) or NCCL's fake
// (nccl/internal/fakenccl). It is not part of a user's API.
//
// A new NCCL call is a row of the table here, its marshalling in load.go,
// the nccl method that fills the frame, and the fake's case in
// nccl/internal/fakenccl.
package ncclabi

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/enum"
)

// Call is one NCCL function, a row of the table.
type Call uint8

// The NCCL functions the binding calls.
const (
	GetVersion Call = iota
	GetUniqueID
	CommInitRankConfig
	CommSplit
	CommFinalize
	CommDestroy
	CommAbort
	CommGetAsyncError
	CommCount
	CommUserRank
	GetErrorString
	GetLastError
	GroupStart
	GroupEnd
	AllReduce
	AllGather
	ReduceScatter
	Broadcast
	Reduce
	Send
	Recv
	CommRegister
	CommDeregister
	CommWindowRegister
	CommWindowDeregister

	// Count is the number of calls: one more than the last.
	Count
)

// row is one function of the table.
type row struct {
	name string
	// device: NCCL works on the caller's current device during the call
	// (a communicator's init, or a collective's launch), which the backend
	// selects on the same locked OS thread first.
	device bool
	// optional: a library without the function still loads (Has reports
	// it missing): window registration came with NCCL 2.27.
	optional bool
}

var table = [Count]row{
	GetVersion:           {name: "ncclGetVersion"},
	GetUniqueID:          {name: "ncclGetUniqueId"},
	CommInitRankConfig:   {name: "ncclCommInitRankConfig", device: true},
	CommSplit:            {name: "ncclCommSplit", device: true},
	CommFinalize:         {name: "ncclCommFinalize", device: true},
	CommDestroy:          {name: "ncclCommDestroy", device: true},
	CommAbort:            {name: "ncclCommAbort", device: true},
	CommGetAsyncError:    {name: "ncclCommGetAsyncError"},
	CommCount:            {name: "ncclCommCount"},
	CommUserRank:         {name: "ncclCommUserRank"},
	GetErrorString:       {name: "ncclGetErrorString"},
	GetLastError:         {name: "ncclGetLastError"},
	GroupStart:           {name: "ncclGroupStart"},
	GroupEnd:             {name: "ncclGroupEnd"},
	AllReduce:            {name: "ncclAllReduce", device: true},
	AllGather:            {name: "ncclAllGather", device: true},
	ReduceScatter:        {name: "ncclReduceScatter", device: true},
	Broadcast:            {name: "ncclBroadcast", device: true},
	Reduce:               {name: "ncclReduce", device: true},
	Send:                 {name: "ncclSend", device: true},
	Recv:                 {name: "ncclRecv", device: true},
	CommRegister:         {name: "ncclCommRegister", device: true},
	CommDeregister:       {name: "ncclCommDeregister", device: true},
	CommWindowRegister:   {name: "ncclCommWindowRegister", device: true, optional: true},
	CommWindowDeregister: {name: "ncclCommWindowDeregister", device: true, optional: true},
}

// String is the C name, e.g. "ncclAllReduce".
func (c Call) String() string {
	if c >= Count {
		return fmt.Sprintf("ncclabi.Call(%d)", uint8(c))
	}
	return table[c].name
}

// Device reports whether c runs on the caller's current device.
func (c Call) Device() bool { return c < Count && table[c].device }

// Optional reports whether a library may lack c and still load.
func (c Call) Optional() bool { return c < Count && table[c].optional }

// Collective reports whether c is an operation on device memory queued on a
// stream: a collective or a point-to-point transfer.
func (c Call) Collective() bool { return c >= AllReduce && c <= Recv }

// Result is an ncclResult_t.
type Result int32

// NCCL's results, as nccl.h numbers them.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

// resultText are the names of nccl.h and the strings ncclGetErrorString
// returns in NCCL 2.28; the binding asks the library, the fake reads them
// here.
var resultText = map[Result][2]string{
	Success:            {"ncclSuccess", "no error"},
	UnhandledCudaError: {"ncclUnhandledCudaError", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
	SystemError:        {"ncclSystemError", "unhandled system error (run with NCCL_DEBUG=INFO for details)"},
	InternalError:      {"ncclInternalError", "internal error - please report this issue to the NCCL developers"},
	InvalidArgument:    {"ncclInvalidArgument", "invalid argument (run with NCCL_DEBUG=WARN for details)"},
	InvalidUsage:       {"ncclInvalidUsage", "invalid usage (run with NCCL_DEBUG=WARN for details)"},
	RemoteError:        {"ncclRemoteError", "remote process exited or there was a network error"},
	InProgress:         {"ncclInProgress", "NCCL operation in progress"},
}

// Name is nccl.h's name of r, e.g. "ncclInvalidArgument";
// "ncclResult(<n>)" for a number nccl.h does not name.
func (r Result) Name() string {
	if t, ok := resultText[r]; ok {
		return t[0]
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// KnownString is ncclGetErrorString's text of r in NCCL 2.28.
func KnownString(r Result) string {
	if t, ok := resultText[r]; ok {
		return t[1]
	}
	return "unknown result code"
}

// DataType is an ncclDataType_t.
type DataType int32

// NCCL's data types, as nccl.h numbers them; NumTypes is one past the last
// (the two FP8 types, which the binding does not offer, are 10 and 11).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
	NumTypes DataType = 12
)

var typeInfo = [...]struct {
	name string
	size uint64
}{
	Int8: {"ncclInt8", 1}, Uint8: {"ncclUint8", 1}, Int32: {"ncclInt32", 4}, Uint32: {"ncclUint32", 4},
	Int64: {"ncclInt64", 8}, Uint64: {"ncclUint64", 8}, Float16: {"ncclFloat16", 2}, Float32: {"ncclFloat32", 4},
	Float64: {"ncclFloat64", 8}, BFloat16: {"ncclBfloat16", 2},
}

// Known reports whether t is a type the binding offers.
func (t DataType) Known() bool { return t >= 0 && int(t) < len(typeInfo) }

// Size is an element's size in bytes; 0 for a type the binding does not
// offer.
func (t DataType) Size() uint64 {
	if !t.Known() {
		return 0
	}
	return typeInfo[t].size
}

// String is nccl.h's name, e.g. "ncclFloat32".
func (t DataType) String() string {
	if !t.Known() {
		return fmt.Sprintf("ncclDataType(%d)", int32(t))
	}
	return typeInfo[t].name
}

// RedOp is an ncclRedOp_t.
type RedOp int32

// NCCL's built-in reduction operations, as nccl.h numbers them.
const (
	Sum    RedOp = 0
	Prod   RedOp = 1
	Max    RedOp = 2
	Min    RedOp = 3
	Avg    RedOp = 4
	NumOps RedOp = 5
)

// String is nccl.h's name, e.g. "ncclSum".
func (o RedOp) String() string { return redOps.Name(o) }

var redOps = enum.Table[RedOp]{Prefix: "nccl", Names: []string{Sum: "Sum", Prod: "Prod", Max: "Max", Min: "Min", Avg: "Avg"}, Unknown: "ncclRedOp(%d)"}

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES: an ncclUniqueId is this many bytes,
// passed to ncclCommInitRankConfig by value.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId.
type UniqueID [UniqueIDBytes]byte

// The configuration (ncclConfig_t) the binding passes: the layout of NCCL
// 2.28 (ncclConfig_v22800), which NCCL 2.27 and later read (a library reads
// the fields its version knows, up to the size given, and the version tells
// which of them the caller set).
const (
	ConfigMagic   = 0xcafebeef // NCCL_API_MAGIC
	ConfigVersion = 22800      // NCCL_VERSION(2, 28, 0)
	// ConfigUndef is NCCL_CONFIG_UNDEF_INT (INT_MIN): NCCL's default.
	ConfigUndef = -1 << 31
	// SplitNoColor is NCCL_SPLIT_NOCOLOR: the rank joins no new
	// communicator.
	SplitNoColor = -1
)

// Config is ncclConfig_t of NCCL 2.28, field for field, in C's layout on a
// 64-bit platform (80 bytes).
type Config struct {
	Size                uint64
	Magic               uint32
	Version             uint32
	Blocking            int32
	CgaClusterSize      int32
	MinCTAs             int32
	MaxCTAs             int32
	NetName             uintptr
	SplitShare          int32
	TrafficClass        int32
	CommName            uintptr
	CollnetEnable       int32
	CTAPolicy           int32
	ShrinkShare         int32
	NvlsCTAs            int32
	NChannelsPerNetPeer int32
	NvlinkCentricSched  int32
}

// ConfigBytes is the size of Config, as C lays it out.
const ConfigBytes = 80

// NewConfig is NCCL_CONFIG_INITIALIZER with blocking and splitShare set:
// every other attribute left to NCCL.
func NewConfig(blocking, splitShare int32) Config {
	u := int32(ConfigUndef)
	return Config{
		Size: ConfigBytes, Magic: ConfigMagic, Version: ConfigVersion,
		Blocking: blocking, CgaClusterSize: u, MinCTAs: u, MaxCTAs: u,
		SplitShare: splitShare, TrafficClass: u, CollnetEnable: u, CTAPolicy: u,
		ShrinkShare: u, NvlsCTAs: u, NChannelsPerNetPeer: u, NvlinkCentricSched: u,
	}
}

// Frame is one call's arguments, filled by package nccl, and what the call
// returned: its result and what it wrote through its out-parameter.
type Frame struct {
	Call   Call
	Device int     // the device the call runs on, for Call.Device calls
	Comm   uintptr // ncclComm_t
	Send   uintptr // sendbuff
	Recv   uintptr // recvbuff
	Count  uint64  // count (sendcount of AllGather, recvcount of ReduceScatter)
	Type   DataType
	Op     RedOp
	Peer   int32   // root of Broadcast and Reduce, peer of Send and Recv
	Stream uintptr // cudaStream_t
	NRanks int32   // ncclCommInitRankConfig's nranks
	Rank   int32   // its rank
	ID     UniqueID
	Color  int32 // ncclCommSplit's color
	Key    int32 // and key
	Config Config
	Size   uint64  // a registered buffer's size
	Handle uintptr // a registration handle or a window (ncclWindow_t)
	Flags  int32   // window flags
	Int    int32   // ncclGetErrorString's result code

	Result Result // what the call returned
	// Out is what the call wrote through its out-parameter. A
	// non-blocking ncclCommSplit writes its newcomm here from another
	// thread once the split ends, after Do returns (NULL until then): the
	// caller keeps the frame until the parent communicator leaves
	// ncclInProgress or its abort returns, and reads Out atomically then.
	Out uint64
	Str string // what ncclGetErrorString or ncclGetLastError returned
}

// Backend runs the calls of the table: libnccl (Load) or NCCL's fake
// (nccl/internal/fakenccl).
type Backend interface {
	// Do makes the calls of fs in order, on one OS thread locked for all
	// of them, selecting each frame's device first where its call needs
	// one, and writes each result into its frame. It stops after the first
	// call whose result is neither Success nor InProgress, and returns how
	// many calls it made. An error is a failure to select a device, before
	// NCCL was called; n is then the index of the frame it was for.
	Do(fs []Frame) (n int, err error)
	// Has reports whether the library has call c (an optional call may be
	// missing).
	Has(c Call) bool
}
