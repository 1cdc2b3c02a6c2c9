package fakenccl

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// comm is one rank's communicator. Backend.mu guards it, but for dropped,
// which pieces read while they run.
type comm struct {
	raw    uintptr // its handle, from Library.Make: a leak names where it was made
	clique *clique
	rank   int
	device int
	// blocking: made with config blocking = 1 (by a split): its calls
	// return once matched, and it is never in progress.
	blocking bool
	err      ncclabi.Result
	last     string // the last error's text
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
	charges     []uintptr // the device memory it holds, from Library.Make
	// first: it was the first communicator of its device's context, and
	// takes FirstCharge at its first collective, FurtherFirstCharge if not.
	first     bool
	used      bool // it ran a collective: its first collective's charge is taken
	finalized bool
	// queued are its pieces queued since its last finalize, which
	// finalize runs.
	queued []*piece
	regs   map[uintptr]reg
	// windows counts its windows posted, the next one's place in the
	// order every rank registers them; wins are those registered.
	windows int
	wins    map[uintptr]reg
	// dropped: aborted or destroyed; a piece of it that runs after fails.
	dropped atomic.Bool
}

type reg struct {
	ptr  cudart.DevicePtr
	size uint64
}

// state is what ncclCommGetAsyncError reports: a blocking communicator's
// calls return when done, and it is never in progress.
func (c *comm) state() ncclabi.Result {
	switch {
	case c.err != ncclabi.Success:
		return c.err
	case c.blocking:
		return ncclabi.Success
	case !c.ready || c.pending > 0:
		return ncclabi.InProgress
	}
	return ncclabi.Success
}

// newComm makes a communicator of rank on device, not yet ready, or fails
// as the device does.
func (b *Backend) newComm(device, rank int, call string) (*comm, error) {
	raw, err := b.lib.Make(cudarttest.Resource{Device: device, Call: call, What: "NCCL communicator"})
	if err != nil {
		return nil, err
	}
	c := &comm{raw: raw, rank: rank, device: device}
	b.comms[raw] = c
	return c, nil
}

// charge takes bytes of c's device for c, or fails every communicator of
// cs, as NCCL fails a communicator whose allocation fails.
func (b *Backend) charge(c *comm, bytes uint64, call string, cs []*comm) bool {
	h, ok := b.take(c, bytes, call, cs)
	if h != 0 {
		c.charges = append(c.charges, h)
	}
	return ok
}

// take takes bytes of c's device, returning their handle (0 for none), or
// fails every communicator of cs.
func (b *Backend) take(c *comm, bytes uint64, call string, cs []*comm) (uintptr, bool) {
	if bytes == 0 {
		return 0, true
	}
	h, err := b.lib.Make(cudarttest.Resource{Device: c.device, Bytes: bytes, Call: call})
	if err != nil {
		b.failAll(cs, ncclabi.UnhandledCudaError, "%s: Cuda failure 2 'out of memory' on device %d (rank %d): %v", call, c.device, c.rank, err)
		return 0, false
	}
	return h, true
}

// ready makes every rank of cl ready, charging each device what NCCL's
// init takes, or fails them all. The first communicator of a device's
// context also takes KeptCharge for the context, which no destroy gives
// back.
func (b *Backend) ready(cl *clique, call string) {
	seen := map[int]int{}
	for _, c := range cl.comms {
		if r, dup := seen[c.device]; dup {
			b.failAll(cl.comms, ncclabi.InvalidUsage, "%s: Duplicate GPU detected: rank %d and rank %d both on device %d", call, r, c.rank, c.device)
			return
		}
		seen[c.device] = c.rank
	}
	for _, c := range cl.comms {
		c.first = !b.lib.Live(b.kept[c.device])
		charge := uint64(FurtherInitCharge)
		if call == "ncclCommSplit" {
			charge = SplitCharge
		}
		if c.first {
			h, ok := b.take(c, KeptCharge, call, cl.comms)
			if !ok {
				return
			}
			b.kept[c.device] = h
			charge = InitCharge - KeptCharge
		}
		if !b.charge(c, charge, call, cl.comms) {
			return
		}
	}
	for _, c := range cl.comms {
		c.ready = true
	}
}

// failAll fails every communicator of cs with r.
func (b *Backend) failAll(cs []*comm, r ncclabi.Result, format string, args ...any) {
	for _, c := range cs {
		if c != nil && c.err == ncclabi.Success {
			c.err = b.fail(c, r, format, args...)
		}
	}
}

// finalize runs c's queued operations, running their streams, as
// ncclCommFinalize waits for them; an operation not matched yet leaves it
// in progress.
func (b *Backend) finalize(c *comm) ncclabi.Result {
	if c.pending > 0 {
		return ncclabi.InProgress
	}
	for _, p := range c.queued {
		if p.ran.Load() {
			continue
		}
		if err := b.lib.Synchronize(c.device, p.stream); err != nil {
			return b.fail(c, ncclabi.UnhandledCudaError, "ncclCommFinalize: %v", err)
		}
	}
	c.queued = nil
	c.finalized = true
	return ncclabi.Success
}

// drop frees c (abort or destroy): its memory goes back to its device, its
// posted parts leave the operations waiting for them, whose other ranks
// stay in progress until their own bound.
func (b *Backend) drop(c *comm) {
	delete(b.comms, c.raw)
	c.dropped.Store(true)
	b.lib.Free(c.raw)
	for _, h := range c.charges {
		b.lib.Free(h)
	}
	c.charges = nil
	cl := c.clique
	if cl == nil {
		return
	}
	if !c.ready && c.rank >= 0 && cl.comms[c.rank] == c {
		cl.comms[c.rank] = nil
		cl.joined--
	}
	for k, op := range cl.open {
		for i, p := range op.parts {
			if p != nil && p.comm == c {
				// NCCL's abort ends the split's job, which fails the new
				// communicator and still hands it to the caller.
				if p.child != nil {
					p.child.err = b.fail(p.child, ncclabi.InternalError, "ncclCommSplit: its parent 0x%x was aborted before every rank split", c.raw)
				}
				p.splitDone()
				op.parts[i] = nil
				op.posted--
			}
		}
		if op.posted == 0 {
			delete(cl.open, k)
			continue
		}
		if !op.key.p2p || op.key.from == c.rank || op.key.to == c.rank {
			b.peerGone(op, c)
		}
	}
}

// peerGone fails the blocking communicators waiting in their calls for op,
// which c, destroyed or aborted, will never post its part of: as a
// blocking NCCL's connection to a peer whose process ended fails. The
// non-blocking ones stay in progress until their own bound.
func (b *Backend) peerGone(op *op, c *comm) {
	for _, q := range op.parts {
		if q == nil || !q.comm.blocking || q.comm.err != ncclabi.Success {
			continue
		}
		q.comm.err = b.fail(q.comm, ncclabi.RemoteError, "%s: rank %d's communicator was aborted or destroyed before the operation was matched", q.f.Call, c.rank)
		if q.child != nil {
			q.child.err = b.fail(q.child, ncclabi.RemoteError, "ncclCommSplit: rank %d's parent communicator was aborted or destroyed before it split", c.rank)
		}
		q.splitDone()
	}
}

// register is ncclCommRegister: the buffer must be device memory of the
// communicator's device.
func (b *Backend) register(c *comm, fr *ncclabi.Frame) ncclabi.Result {
	p := cudart.DevicePtr(fr.Send)
	a, ok := b.lib.Allocation(p)
	switch {
	case fr.Size == 0:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommRegister: size 0")
	case !ok || fr.Size > uint64(a.End-p):
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommRegister: %d B at 0x%x is not inside one device allocation (NCCL 2.28 shares the one that holds the buffer's start, a single cuMemCreate allocation in virtual memory)", fr.Size, fr.Send)
	case a.Device != c.device:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommRegister: buffer 0x%x is on device %d, the communicator on device %d", fr.Send, a.Device, c.device)
	}
	fr.Out = uint64(b.handle(&c.regs, reg{ptr: p, size: fr.Size}))
	return ncclabi.Success
}

// handle adds r to *m under a new handle of the fake's, and returns it.
func (b *Backend) handle(m *map[uintptr]reg, r reg) uintptr {
	if *m == nil {
		*m = make(map[uintptr]reg)
	}
	b.nextReg += 0x10
	h := 0xd_0000 + b.nextReg
	(*m)[h] = r
	return h
}

// String names the communicator, for messages.
func (c *comm) String() string {
	return fmt.Sprintf("comm 0x%x (rank %d on device %d)", c.raw, c.rank, c.device)
}
