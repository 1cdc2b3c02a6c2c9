// Package fakenccl is NCCL's fake, beside its binding: the ranks of a
// cudarttest.Fake's devices as goroutines of one process, every operation
// computed on the CPU. It reaches the fake runtime only through the hook
// cudarttest.Library. package nccl opens it for a Fake; nothing else
// imports it.
package fakenccl

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// The fake follows NCCL 2.28.9, as measured on 2×H200 from the binding and
// on 2×H100 (NV18) from C with ncclCommInitAll, one process (issue 33).
const version = 22809 // NCCL_VERSION(2, 28, 9)

// The device memory communicators take outside any allocation the program
// sees, which the fake charges exactly: measured on 2×H200, NCCL 2.28.9,
// CUDA 13.0, 2 ranks, by the conformance group's Charge, which logs every
// stage in bytes ("nccl charge:") and asserts each within [½, 2] of these
// (identical on both devices; issue 33's C measurement on 2×H100 gave 392
// MiB at init). 4 ranks are not measured (no 4-GPU host was lent for it):
// the fake charges them the same. Each is one line to update from a GPU
// run.
const (
	// InitCharge is what the first communicator of a device's context
	// takes at init: 386 MiB, KeptCharge of it NCCL's own in the context.
	InitCharge = 386 << 20
	// FirstCharge is what that communicator takes more at its first
	// collective: 474 MiB, at its first all-reduce.
	FirstCharge = 474 << 20
	// FurtherInitCharge is what each further communicator of a device
	// takes at init (a second InitAll, while the first is live): 198 MiB.
	FurtherInitCharge = 198 << 20
	// SplitCharge is what a communicator made by ncclCommSplit takes at
	// its split: 196 MiB.
	SplitCharge = 196 << 20
	// FurtherFirstCharge is what a further communicator, or a split's,
	// takes more at its first collective: 288 MiB.
	FurtherFirstCharge = 288 << 20
	// KeptCharge is what destroying every communicator of a device does
	// not give back: 378 MiB, NCCL's kernels and static buffers, kept in
	// the device's context until it ends (a reset), as cuBLAS keeps its
	// kernels. When NCCL takes it is not measured: the fake takes it at the
	// first init in the context, where a further init takes 188 MiB less;
	// a communicator made there later, even with none live, is a further
	// one.
	KeptCharge = 378 << 20
	// WindowCharge is what a window registered with NCCL_WIN_DEFAULT
	// takes at its registration on each rank: 32 MiB (33,554,432 B),
	// measured for a window of 2 MiB on 2 ranks (NCCL 2.28.3), by the
	// conformance group's Windows; its first all-reduce took 0 B more.
	// Whether it grows with the window's size, and when NCCL gives it back,
	// are not measured: the fake charges every window the same and keeps
	// the charge until the communicator is destroyed or aborted, which is
	// never more lenient than giving it back at deregistration.
	WindowCharge = 32 << 20
	// SymmetricWindowCharge is WindowCharge for a window registered with
	// NCCL_WIN_COLL_SYMMETRIC: 36 MiB (37,748,736 B), measured alike.
	SymmetricWindowCharge = 36 << 20
)

// Backend is the fake's NCCL on one Fake (see Open).
type Backend struct {
	lib *cudarttest.Library

	// mu guards what follows and orders the calls. It is never taken by a
	// piece's Work.Run, which runs under the fake's lock while a call here
	// may hold mu and wait for the fake's lock.
	mu sync.Mutex
	// settled is signalled at the end of every call: a blocking
	// communicator's call waits on it, mu released, for its operations to
	// be matched by the other ranks' calls.
	settled *sync.Cond
	comms   map[uintptr]*comm
	cliques map[ncclabi.UniqueID]*clique // by the id of their init
	ids     map[ncclabi.UniqueID]bool    // the ids ncclGetUniqueId gave
	nextID  uint64
	nextReg uintptr
	last    string // the last error, for ncclGetLastError(NULL)
	// kept is, per device, the handle of KeptCharge, live until a reset
	// of the device.
	kept map[int]uintptr
}

// Open returns the fake's NCCL on f, one per fake however many times it is
// opened (package nccl's Open does it for a Fake, bare or wrapped).
//
// Ranks are goroutines: each calls with its own communicator, and an
// operation is matched across the ranks of its communicator when the last
// of them posts it. Until then the caller's communicator is in progress
// (ncclInProgress from ncclCommGetAsyncError), which the binding polls
// within its bound; a rank that never posts leaves the others in progress
// until their bound ends, and their abort. Collectives must come in the same
// order on every rank with the same call, count, type, operation and root;
// a transfer's count and type must agree with its peer's: a rank that
// disagrees fails every rank of the operation with ncclInvalidUsage, and the
// last error says who called what. Once matched, every rank's part is queued
// on its stream at once (cudarttest.Library.EnqueueAll), so that no
// synchronisation of one rank's device sees it without its peers'; when
// it runs, it runs the other ranks' streams up to their parts, and the
// last part to run computes
// the operation on the CPU (ncclabi.Combine), reading and writing device
// memory as a kernel does, faulting the devices with
// cudaErrorIllegalAddress otherwise. A part queued on a capturing stream is
// recorded as the nodes CUDA records for an NCCL kernel: an event-wait
// node (the communicator's first in the capture), the kernel node, an
// event-record node; each launch
// of the graphs runs the operation again, each rank's graph launched on the
// stream it captured. Communicators charge the memory NCCL takes (see the
// constants) and give it back when destroyed or aborted, but KeptCharge,
// which a reset of the device gives back; a reset destroys them too. A split writes its new communicator into the
// caller's frame once every rank has split (or the split failed, or its
// parent was aborted, handing out a failed one), never at the call, as
// NCCL 2.28's split job does. FailCall and FailCallNth take NCCL's call
// names, with the ncclResult_t to return.
//
// Communicators are non-blocking at init. A split makes a blocking one
// (config blocking = 1), whose calls return once every rank has posted its
// part (the fake makes every collective a blocking NCCL's first, which
// waits for its peers while it connects them), and which a refused
// argument does not fail. A blocking call whose peers' communicators are
// aborted or destroyed before they post fails with ncclRemoteError.
//
// Windows (ncclCommWindowRegister) follow NCCL 2.28 on a host whose GPUs
// all reach each other, where NCCL makes them symmetric memory (see
// windowCheck and windowsAgree); they charge no device memory, which is
// not measured.
func Open(f *cudarttest.Fake) *Backend {
	names := make([]string, ncclabi.Count)
	for c := range ncclabi.Count {
		names[c] = c.String()
	}
	return cudarttest.Attach(f, "NCCL", names, func(l *cudarttest.Library) *Backend {
		b := &Backend{lib: l, comms: make(map[uintptr]*comm), cliques: make(map[ncclabi.UniqueID]*clique), ids: make(map[ncclabi.UniqueID]bool), kept: make(map[int]uintptr)}
		b.settled = sync.NewCond(&b.mu)
		return b
	})
}

// Has reports every call of the table: the fake is NCCL 2.28.
func (*Backend) Has(c ncclabi.Call) bool { return c < ncclabi.Count }

// Do runs the batch as NCCL would: a group's operations are posted together
// at its end, or not at all if one of them was refused. A group of
// blocking communicators' calls (or one such call alone) returns once every
// rank has posted its part, as a blocking NCCL's group end returns once it
// has connected its peers and launched; a non-blocking one returns
// ncclInProgress until then. Blocking and non-blocking communicators in one
// group are refused, with NCCL's message (see mode).
func (b *Backend) Do(fs []ncclabi.Frame) (int, error) {
	b.mu.Lock()
	defer func() {
		b.settled.Broadcast()
		b.mu.Unlock()
	}()
	depth := 0
	var group []*ncclabi.Frame
	groupErr := ncclabi.Success
	blocking := -1 // the group's mode, as NCCL's ncclGroupBlocking: unset, 0 or 1
	failed := -1
	for i := range fs {
		fr := &fs[i]
		if failed >= 0 && fr.Call != ncclabi.GroupEnd {
			continue
		}
		if fr.Call.Device() {
			if err := b.lib.SetDevice(fr.Device); err != nil {
				return i, err
			}
		}
		if code, ok := b.lib.Injected(fr.Call.String()); ok {
			fr.Result = b.fail(b.comms[fr.Comm], ncclabi.Result(code), "%s: injected by FailCall or FailCallNth", fr.Call)
		} else {
			switch fr.Call {
			case ncclabi.GroupStart:
				depth++
				fr.Result = ncclabi.Success
			case ncclabi.GroupEnd:
				if depth == 0 {
					fr.Result = b.fail(nil, ncclabi.InvalidUsage, "ncclGroupEnd: not in a group call")
					break
				}
				depth--
				if depth > 0 {
					fr.Result = ncclabi.Success
					break
				}
				fr.Result = groupErr
				if groupErr == ncclabi.Success {
					fr.Result = b.post(group, blocking == 1)
				}
				group, groupErr, blocking = nil, ncclabi.Success, -1
			default:
				fr.Result = b.call(fr)
				if fr.Result != ncclabi.Success || !deferred(fr.Call) {
					break
				}
				m := b.mode(fr)
				if depth == 0 {
					fr.Result = b.post([]*ncclabi.Frame{fr}, m == 1)
					break
				}
				if blocking >= 0 && m != blocking {
					fr.Result = b.fail(b.comms[fr.Comm], ncclabi.InvalidArgument, "%s: Blocking and nonblocking communicators are not allowed in the same group.", fr.Call)
					break
				}
				blocking = m
				group = append(group, fr)
			}
		}
		if fr.Result != ncclabi.Success && fr.Result != ncclabi.InProgress && failed < 0 {
			failed = i
			if depth > 0 {
				groupErr = fr.Result
			}
		}
	}
	if failed >= 0 {
		return failed + 1, nil
	}
	return len(fs), nil
}

// mode is the blocking mode a posted call gives its group, as NCCL's
// ncclAsyncLaunch and ncclGroupCommJoin set ncclGroupBlocking: an init's
// own config's, a split's parent's (the split runs in the parent's mode,
// whatever the new communicator's), an operation's communicator's. NCCL
// 2.28 refuses mixed modes for the jobs ncclAsyncLaunch queues (inits,
// splits); for operations it gives the group the last communicator's mode,
// which leaves a blocking communicator of a non-blocking group in
// ncclInProgress for good: the fake refuses both.
func (b *Backend) mode(fr *ncclabi.Frame) int {
	if fr.Call == ncclabi.CommInitRankConfig {
		return int(fr.Config.Blocking)
	}
	if b.comms[fr.Comm].blocking {
		return 1
	}
	return 0
}

// deferred reports whether c is posted to its clique (at its group's end,
// inside one): an init, a split, a window or an operation on device
// memory.
func deferred(c ncclabi.Call) bool {
	return c == ncclabi.CommInitRankConfig || c == ncclabi.CommSplit || c == ncclabi.CommWindowRegister || c.Collective()
}

// fail records the last error, of c and of the fake, and returns r.
func (b *Backend) fail(c *comm, r ncclabi.Result, format string, args ...any) ncclabi.Result {
	msg := fmt.Sprintf(format, args...)
	b.last = msg
	if c != nil {
		c.last = msg
	}
	return r
}

// live is the communicator raw names, nil for none: a reset of its device
// destroyed it with the device's memory.
func (b *Backend) live(raw uintptr) *comm {
	c := b.comms[raw]
	if c != nil && !b.lib.Live(raw) {
		b.drop(c)
		return nil
	}
	return c
}

// call checks fr as NCCL checks its arguments and makes the calls that
// post nothing.
func (b *Backend) call(fr *ncclabi.Frame) ncclabi.Result {
	switch fr.Call {
	case ncclabi.GetVersion:
		fr.Out = version
		return ncclabi.Success
	case ncclabi.GetUniqueID:
		b.nextID++
		var id ncclabi.UniqueID
		copy(id[:], "cudapool fake nccl")
		binary.LittleEndian.PutUint64(id[24:], b.nextID)
		b.ids[id] = true
		fr.ID = id
		return ncclabi.Success
	case ncclabi.GetErrorString:
		// NCCL's text sends the reader to NCCL_DEBUG's log, which the fake
		// does not write: its last error (ncclGetLastError) says it all.
		s := ncclabi.KnownString(ncclabi.Result(fr.Int))
		if i := strings.Index(s, " (run with NCCL_DEBUG="); i >= 0 {
			s = s[:i]
		}
		fr.Str = s
		return ncclabi.Success
	case ncclabi.GetLastError:
		fr.Str = b.last
		if c := b.comms[fr.Comm]; c != nil {
			fr.Str = c.last
		}
		return ncclabi.Success
	case ncclabi.CommInitRankConfig:
		return b.initCheck(fr)
	}
	c := b.live(fr.Comm)
	if c == nil {
		return b.fail(nil, ncclabi.InvalidArgument, "%s: comm 0x%x is not a live communicator", fr.Call, fr.Comm)
	}
	switch fr.Call {
	case ncclabi.CommGetAsyncError:
		fr.Out = uint64(int64(c.state()))
		return ncclabi.Success
	case ncclabi.CommCount, ncclabi.CommUserRank:
		if !c.ready {
			return b.fail(c, ncclabi.InvalidUsage, "%s: comm 0x%x is not initialized yet", fr.Call, c.raw)
		}
		fr.Out = uint64(c.clique.nranks)
		if fr.Call == ncclabi.CommUserRank {
			fr.Out = uint64(c.rank)
		}
		return ncclabi.Success
	case ncclabi.CommAbort:
		b.drop(c)
		return ncclabi.Success
	case ncclabi.CommFinalize:
		return b.finalize(c)
	case ncclabi.CommDestroy:
		if r := b.finalize(c); r != ncclabi.Success {
			return r
		}
		b.drop(c)
		return ncclabi.Success
	case ncclabi.CommRegister:
		return b.register(c, fr)
	case ncclabi.CommDeregister:
		if _, ok := c.regs[fr.Handle]; !ok {
			return b.fail(c, ncclabi.InvalidArgument, "ncclCommDeregister: handle 0x%x is not a registration of comm 0x%x", fr.Handle, c.raw)
		}
		delete(c.regs, fr.Handle)
		return ncclabi.Success
	case ncclabi.CommWindowDeregister:
		return b.deregisterWindow(c, fr)
	}
	if c.err != ncclabi.Success {
		return b.fail(c, c.err, "%s: comm 0x%x failed before: %s", fr.Call, c.raw, c.last)
	}
	if !c.ready || c.finalized {
		return b.fail(c, ncclabi.InvalidUsage, "%s: comm 0x%x is %s", fr.Call, c.raw, map[bool]string{true: "finalized", false: "not initialized yet"}[c.finalized])
	}
	switch fr.Call {
	case ncclabi.CommSplit:
		return b.splitCheck(c, fr)
	case ncclabi.CommWindowRegister:
		if c.pending > 0 {
			return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowRegister: Attempt to use communicator before the previous operation returned ncclSuccess")
		}
		return ncclabi.Success
	}
	// A refused operation fails a non-blocking communicator for good, as
	// NCCL's ncclEnqueueCheck sets its asynchronous error; a blocking one's
	// it leaves, and the communicator goes on.
	r := b.args(c, fr)
	if r != ncclabi.Success && !c.blocking {
		c.err = r
	}
	return r
}

// splitCheck checks ncclCommSplit's arguments as NCCL 2.28's
// ncclCommInitChildComm does. A config given is the new communicator's
// whole config: a field it leaves undefined takes NCCL's default, not the
// parent's (only a NULL config copies the parent's). The fake refuses an
// undefined blocking, which NCCL_COMM_BLOCKING decides and else NCCL's
// default (blocking): a binding says which it makes.
func (b *Backend) splitCheck(c *comm, fr *ncclabi.Frame) ncclabi.Result {
	cfg := fr.Config
	switch {
	case c.pending > 0:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommSplit: Attempt to use communicator before the previous operation returned ncclSuccess")
	case cfg.Magic != ncclabi.ConfigMagic:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommSplit: config not initialized via NCCL_CONFIG_INITIALIZER")
	case cfg.Blocking == ncclabi.ConfigUndef:
		return b.fail(c, ncclabi.InvalidUsage, "ncclCommSplit: blocking undefined, which NCCL_COMM_BLOCKING or NCCL's default (blocking) decides: the fake wants 0 or 1")
	case cfg.Blocking != 0 && cfg.Blocking != 1:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommSplit: Invalid config blocking attribute value %d", cfg.Blocking)
	}
	return ncclabi.Success
}

// initCheck checks ncclCommInitRankConfig's arguments. The fake makes
// non-blocking communicators at init, and blocking ones by a split of one
// (as package nccl does, so that an init waiting for its peers can be
// aborted).
func (b *Backend) initCheck(fr *ncclabi.Frame) ncclabi.Result {
	cfg := fr.Config
	switch {
	case cfg.Magic != ncclabi.ConfigMagic:
		return b.fail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: config not initialized via NCCL_CONFIG_INITIALIZER")
	case cfg.Blocking != 0:
		return b.fail(nil, ncclabi.InvalidUsage, "ncclCommInitRankConfig: the fake inits non-blocking communicators only (blocking %d); a blocking one is a split of one", cfg.Blocking)
	case fr.NRanks < 1 || fr.Rank < 0 || fr.Rank >= fr.NRanks:
		return b.fail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: rank %d of %d: a rank must be in 0..nranks-1", fr.Rank, fr.NRanks)
	case !b.ids[fr.ID]:
		return b.fail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: the unique id was not made by ncclGetUniqueId")
	}
	return ncclabi.Success
}

// args checks an operation's arguments as NCCL's ArgsCheck does, and the
// stream as the launch would.
func (b *Backend) args(c *comm, fr *ncclabi.Frame) ncclabi.Result {
	nr := c.clique.nranks
	peer := fr.Peer
	if fr.Call != ncclabi.Broadcast && fr.Call != ncclabi.Reduce && fr.Call != ncclabi.Send && fr.Call != ncclabi.Recv {
		peer = 0
	}
	switch {
	case peer < 0 || int(peer) >= nr:
		return b.fail(c, ncclabi.InvalidArgument, "%s : invalid root %d (root should be in the 0..%d range)", fr.Call, peer, nr)
	case !fr.Type.Known():
		return b.fail(c, ncclabi.InvalidArgument, "%s : invalid type %d", fr.Call, int32(fr.Type))
	case fr.Op < 0 || fr.Op >= ncclabi.NumOps:
		return b.fail(c, ncclabi.InvalidArgument, "%s : invalid reduction operation %d", fr.Call, int32(fr.Op))
	case fr.Count > 1<<48:
		return b.fail(c, ncclabi.InvalidArgument, "%s : count %d is past any device's memory", fr.Call, fr.Count)
	}
	dev, err := b.lib.StreamDevice(c.device, cudart.Stream(fr.Stream))
	if err == nil && dev != c.device {
		err = fmt.Errorf("stream 0x%x is of device %d, the communicator of device %d", fr.Stream, dev, c.device)
	}
	if err != nil {
		return b.fail(c, ncclabi.UnhandledCudaError, "%s: %v", fr.Call, err)
	}
	return ncclabi.Success
}
