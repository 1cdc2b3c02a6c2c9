package cudarttest

import (
	"encoding/binary"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// The fake's NCCL follows NCCL 2.28.9, as measured on a 2×H100 host (NV18)
// from C with ncclCommInitAll, one process (issue 33).
const (
	ncclVersion = 22809 // NCCL_VERSION(2, 28, 9)
	// ncclInitCharge is the device memory the first communicator of a
	// device takes at init, outside any allocation the program sees, and
	// ncclFirstCharge what it takes more at its first collective: 392 MiB
	// and 474 MiB. ncclFurtherCharge is what each further communicator of
	// a device (while another is live there) took in all, init and first
	// all-reduce together: 485 MiB. How that total splits between init and
	// the first collective is not measured yet: the fake charges it at
	// init, when a pool sized around it must already leave it room.
	ncclInitCharge    = 392 << 20
	ncclFirstCharge   = 474 << 20
	ncclFurtherCharge = 485 << 20
)

// ncclState is the fake's NCCL: communicators, the cliques they form and
// the operations matched across their ranks. f.mu guards it.
type ncclState struct {
	comms   map[uintptr]*ncclComm
	cliques map[ncclabi.UniqueID]*ncclClique // by the id of their init
	ids     map[ncclabi.UniqueID]bool        // the ids ncclGetUniqueId gave
	nextID  uint64
	next    uintptr // the last communicator handle given out
	last    string  // the last error, for ncclGetLastError(NULL)
}

// ncclComm is one rank's communicator.
type ncclComm struct {
	raw    uintptr
	clique *ncclClique
	rank   int
	device int
	seq    int    // the runtime calls made before it
	origin origin // where it was made, on a fake that checks leaks
	err    ncclabi.Result
	last   string // the last error's text
	// ready: every rank joined (init), or the split that made it matched.
	ready bool
	// pending counts its operations posted but not matched by every rank.
	pending int
	// issued counts its collectives (and splits) posted: the next one's
	// place in the order every rank must follow.
	issued int
	// sent and recvd count its sends to and receives from each peer: a
	// peer's k-th send to this rank matches this rank's k-th receive.
	sent, recvd map[int]int
	charged     uint64 // device memory it holds
	// first: it was the first communicator of its device when made, and
	// takes ncclFirstCharge at its first collective.
	first     bool
	used      bool // it ran a collective: its first charge is taken
	finalized bool
	// queued counts, per stream, its matched operations not yet run.
	queued map[cudart.Stream]int
	regs   map[uintptr]ncclReg
}

type ncclReg struct {
	ptr  cudart.DevicePtr
	size uint64
}

// ncclClique is the ranks of one communicator.
type ncclClique struct {
	nranks int
	comms  []*ncclComm // by rank; nil until the rank joined
	joined int
	// open are the operations posted by some ranks and not yet by all.
	open map[ncclKey]*ncclOp
}

// ncclKey names an operation across ranks: a collective by its place in
// the order, a transfer by its sender, receiver and count between them.
type ncclKey struct {
	p2p       bool
	seq       int
	from, to  int
	transfers int
}

// ncclOp is one operation of a clique, as each rank posted it.
type ncclOp struct {
	key    ncclKey
	clique *ncclClique
	parts  []*ncclPart // by rank; the sender and the receiver of a transfer
	posted int
	ready  int // parts whose stream reached them
	done   bool
	failed *failure
}

// ncclPart is one rank's call of an operation.
type ncclPart struct {
	comm  *ncclComm
	f     ncclabi.Frame
	ready bool
	child *ncclComm // a split's new communicator; nil for NCCL_SPLIT_NOCOLOR
	// out is the caller's newcomm of a split, which NCCL writes once the
	// split is done (or failed), not when ncclCommSplit returns.
	out *uint64
}

// NCCL is the fake's NCCL, which nccl.Open uses for a Fake: call
// nccl.Open(fake) rather than this.
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
// last error says who called what. Once matched, each rank's part is queued
// on its stream; when it runs, it runs the other ranks' streams up to their
// parts, then computes the operation on the CPU (ncclabi.Combine), reading
// and writing device memory as a kernel does: checked against live
// allocations and, WithMemcheck, the annotations, faulting the devices with
// cudaErrorIllegalAddress otherwise. Communicators charge the memory NCCL
// takes (see the constants), and give it back when destroyed or aborted.
// A split writes its new communicator into the caller's frame once every
// rank has split (or the split failed, or its parent was aborted, handing
// out a failed one), never at the call, as NCCL 2.28's split job does.
//
// It runs non-blocking communicators only (the binding makes no other),
// and does not capture NCCL operations into graphs: a collective on a
// capturing stream fails with ncclInvalidUsage. It has no window
// registration (as a library before NCCL 2.27).
func (f *Fake) NCCL() ncclabi.Backend { return fakeNCCL{f} }

type fakeNCCL struct{ f *Fake }

// Has reports every call but window registration.
func (fakeNCCL) Has(c ncclabi.Call) bool {
	return c < ncclabi.Count && c != ncclabi.CommWindowRegister && c != ncclabi.CommWindowDeregister
}

// Do runs the batch as NCCL would, under the fake's lock: a group's
// operations are posted together at its end, or not at all if one of them
// was refused.
func (b fakeNCCL) Do(fs []ncclabi.Frame) (int, error) {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	depth := 0
	var group []*ncclabi.Frame
	var groupErr ncclabi.Result
	failed := -1
	for i := range fs {
		fr := &fs[i]
		if failed >= 0 && fr.Call != ncclabi.GroupEnd {
			continue
		}
		if fr.Call.Device() {
			if x := f.device(fr.Device); x != nil {
				return i, x.err(calls.SetDevice, "(%d)", fr.Device)
			}
		}
		switch fr.Call {
		case ncclabi.GroupStart:
			depth++
			fr.Result = ncclabi.Success
		case ncclabi.GroupEnd:
			if depth == 0 {
				fr.Result = f.ncclFail(nil, ncclabi.InvalidUsage, "ncclGroupEnd: not in a group call")
				break
			}
			depth--
			if depth > 0 {
				fr.Result = ncclabi.Success
				break
			}
			fr.Result = groupErr
			if groupErr == ncclabi.Success {
				fr.Result = f.ncclPost(group)
			}
			group, groupErr = nil, ncclabi.Success
		default:
			fr.Result = f.ncclCall(fr)
			if fr.Result == ncclabi.Success && ncclDeferred(fr.Call) {
				if depth > 0 {
					group = append(group, fr)
				} else {
					fr.Result = f.ncclPost([]*ncclabi.Frame{fr})
				}
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

// ncclDeferred reports whether c is posted to its clique (at its group's
// end, inside one): an init, a split or an operation on device memory.
func ncclDeferred(c ncclabi.Call) bool {
	return c == ncclabi.CommInitRankConfig || c == ncclabi.CommSplit || c.Collective()
}

// ncclFail records the last error, of c and of the fake, and returns r.
func (f *Fake) ncclFail(c *ncclComm, r ncclabi.Result, format string, args ...any) ncclabi.Result {
	msg := fmt.Sprintf(format, args...)
	f.nccl.last = msg
	if c != nil {
		c.last = msg
	}
	return r
}

// ncclCall checks fr as NCCL checks its arguments and makes the calls that
// post nothing.
func (f *Fake) ncclCall(fr *ncclabi.Frame) ncclabi.Result {
	n := &f.nccl
	switch fr.Call {
	case ncclabi.GetVersion:
		fr.Out = ncclVersion
		return ncclabi.Success
	case ncclabi.GetUniqueID:
		n.nextID++
		var id ncclabi.UniqueID
		copy(id[:], "cudapool fake nccl")
		binary.LittleEndian.PutUint64(id[24:], n.nextID)
		if n.ids == nil {
			n.ids = make(map[ncclabi.UniqueID]bool)
		}
		n.ids[id] = true
		fr.ID = id
		return ncclabi.Success
	case ncclabi.GetErrorString:
		fr.Str = ncclabi.KnownString(ncclabi.Result(fr.Int))
		return ncclabi.Success
	case ncclabi.GetLastError:
		fr.Str = n.last
		if c := n.comms[fr.Comm]; c != nil {
			fr.Str = c.last
		}
		return ncclabi.Success
	case ncclabi.CommInitRankConfig:
		return f.ncclInitCheck(fr)
	}
	c := n.comms[fr.Comm]
	if c == nil {
		return f.ncclFail(nil, ncclabi.InvalidArgument, "%s: comm 0x%x is not a live communicator", fr.Call, fr.Comm)
	}
	switch fr.Call {
	case ncclabi.CommGetAsyncError:
		fr.Out = uint64(int64(c.state()))
		return ncclabi.Success
	case ncclabi.CommCount, ncclabi.CommUserRank:
		if !c.ready {
			return f.ncclFail(c, ncclabi.InvalidUsage, "%s: comm 0x%x is not initialized yet", fr.Call, c.raw)
		}
		fr.Out = uint64(c.clique.nranks)
		if fr.Call == ncclabi.CommUserRank {
			fr.Out = uint64(c.rank)
		}
		return ncclabi.Success
	case ncclabi.CommAbort:
		f.ncclDrop(c)
		return ncclabi.Success
	case ncclabi.CommFinalize:
		return f.ncclFinalize(c)
	case ncclabi.CommDestroy:
		if r := f.ncclFinalize(c); r != ncclabi.Success {
			return r
		}
		f.ncclDrop(c)
		return ncclabi.Success
	case ncclabi.CommRegister:
		return f.ncclRegister(c, fr)
	case ncclabi.CommDeregister:
		if _, ok := c.regs[fr.Handle]; !ok {
			return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommDeregister: handle 0x%x is not a registration of comm 0x%x", fr.Handle, c.raw)
		}
		delete(c.regs, fr.Handle)
		return ncclabi.Success
	}
	if c.err != ncclabi.Success {
		return f.ncclFail(c, c.err, "%s: comm 0x%x failed before: %s", fr.Call, c.raw, c.last)
	}
	if !c.ready || c.finalized {
		return f.ncclFail(c, ncclabi.InvalidUsage, "%s: comm 0x%x is %s", fr.Call, c.raw, map[bool]string{true: "finalized", false: "not initialized yet"}[c.finalized])
	}
	if fr.Call == ncclabi.CommSplit {
		return f.ncclSplitCheck(c, fr)
	}
	// A refused operation fails a non-blocking communicator for good, as
	// NCCL's ncclEnqueueCheck sets its asynchronous error.
	r := f.ncclArgs(c, fr)
	if r != ncclabi.Success {
		c.err = r
	}
	return r
}

// state is what ncclCommGetAsyncError reports.
func (c *ncclComm) state() ncclabi.Result {
	switch {
	case c.err != ncclabi.Success:
		return c.err
	case !c.ready || c.pending > 0:
		return ncclabi.InProgress
	}
	return ncclabi.Success
}

// ncclSplitCheck checks ncclCommSplit's arguments as NCCL 2.28's
// ncclCommInitChildComm does. A config given is the new communicator's
// whole config: a field it leaves undefined takes NCCL's default, not the
// parent's (only a NULL config copies the parent's), so an undefined
// blocking makes a blocking communicator, which the fake does not run.
func (f *Fake) ncclSplitCheck(c *ncclComm, fr *ncclabi.Frame) ncclabi.Result {
	cfg := fr.Config
	switch {
	case c.pending > 0:
		return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommSplit: Attempt to use communicator before the previous operation returned ncclSuccess")
	case cfg.Magic != ncclabi.ConfigMagic:
		return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommSplit: config not initialized via NCCL_CONFIG_INITIALIZER")
	case cfg.Blocking != 0:
		return f.ncclFail(c, ncclabi.InvalidUsage, "ncclCommSplit: the fake runs non-blocking communicators only (blocking %d; undefined is NCCL's default, blocking)", cfg.Blocking)
	}
	return ncclabi.Success
}

// ncclInitCheck checks ncclCommInitRankConfig's arguments.
func (f *Fake) ncclInitCheck(fr *ncclabi.Frame) ncclabi.Result {
	cfg := fr.Config
	switch {
	case cfg.Magic != ncclabi.ConfigMagic:
		return f.ncclFail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: config not initialized via NCCL_CONFIG_INITIALIZER")
	case cfg.Blocking != 0:
		return f.ncclFail(nil, ncclabi.InvalidUsage, "ncclCommInitRankConfig: the fake runs non-blocking communicators only (blocking %d)", cfg.Blocking)
	case fr.NRanks < 1 || fr.Rank < 0 || fr.Rank >= fr.NRanks:
		return f.ncclFail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: rank %d of %d: a rank must be in 0..nranks-1", fr.Rank, fr.NRanks)
	case !f.nccl.ids[fr.ID]:
		return f.ncclFail(nil, ncclabi.InvalidArgument, "ncclCommInitRankConfig: the unique id was not made by ncclGetUniqueId")
	}
	if x := f.broken(fr.Device); x != nil {
		return f.ncclFail(nil, ncclabi.UnhandledCudaError, "ncclCommInitRankConfig on device %d: %s", fr.Device, x.why)
	}
	return ncclabi.Success
}

// ncclArgs checks an operation's arguments as NCCL's ArgsCheck does, and
// the stream as the launch would.
func (f *Fake) ncclArgs(c *ncclComm, fr *ncclabi.Frame) ncclabi.Result {
	nr := c.clique.nranks
	peer := fr.Peer
	if fr.Call != ncclabi.Broadcast && fr.Call != ncclabi.Reduce && fr.Call != ncclabi.Send && fr.Call != ncclabi.Recv {
		peer = 0
	}
	switch {
	case peer < 0 || int(peer) >= nr:
		return f.ncclFail(c, ncclabi.InvalidArgument, "%s : invalid root %d (root should be in the 0..%d range)", fr.Call, peer, nr)
	case !fr.Type.Known():
		return f.ncclFail(c, ncclabi.InvalidArgument, "%s : invalid type %d", fr.Call, int32(fr.Type))
	case fr.Op < 0 || fr.Op >= ncclabi.NumOps:
		return f.ncclFail(c, ncclabi.InvalidArgument, "%s : invalid reduction operation %d", fr.Call, int32(fr.Op))
	case fr.Count > 1<<48:
		return f.ncclFail(c, ncclabi.InvalidArgument, "%s : count %d is past any device's memory", fr.Call, fr.Count)
	}
	s := cudart.Stream(fr.Stream)
	dev, x := f.streamOf(c.device, s)
	if x == nil && dev != c.device {
		x = fail(400, "stream 0x%x is of device %d, the communicator of device %d", fr.Stream, dev, c.device)
	}
	if x != nil {
		return f.ncclFail(c, ncclabi.UnhandledCudaError, "%s: %s", fr.Call, x.why)
	}
	if f.graph.captures[canonical(s)] != nil {
		return f.ncclFail(c, ncclabi.InvalidUsage, "%s: stream 0x%x captures: the fake does not capture NCCL operations into graphs", fr.Call, fr.Stream)
	}
	return ncclabi.Success
}
