package cudarttest

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// ncclPost posts the calls of one group (or one call outside any) to their
// cliques, and reports InProgress until each of them is matched by every
// rank.
func (f *Fake) ncclPost(frames []*ncclabi.Frame) ncclabi.Result {
	var touched []*ncclComm
	for _, fr := range frames {
		var c *ncclComm
		if fr.Call == ncclabi.CommInitRankConfig {
			c = f.ncclInit(fr)
		} else {
			c = f.nccl.comms[fr.Comm]
			f.ncclPostOp(c, fr)
		}
		touched = append(touched, c)
	}
	res := ncclabi.Success
	for _, c := range touched {
		if st := c.state(); st == ncclabi.InProgress {
			res = ncclabi.InProgress
		}
	}
	return res
}

// ncclInit makes rank fr.Rank's communicator and joins it to the clique of
// its id, which is ready once every rank joined.
func (f *Fake) ncclInit(fr *ncclabi.Frame) *ncclComm {
	n := &f.nccl
	c := f.ncclNewComm(fr.Device, int(fr.Rank))
	fr.Out = uint64(c.raw)
	cl := n.cliques[fr.ID]
	if cl == nil {
		cl = &ncclClique{nranks: int(fr.NRanks), comms: make([]*ncclComm, fr.NRanks)}
		if n.cliques == nil {
			n.cliques = make(map[ncclabi.UniqueID]*ncclClique)
		}
		n.cliques[fr.ID] = cl
	}
	c.clique = cl
	switch {
	case cl.nranks != int(fr.NRanks):
		c.err = f.ncclFail(c, ncclabi.InvalidUsage, "ncclCommInitRankConfig: rank %d says %d ranks, the ranks before it %d", fr.Rank, fr.NRanks, cl.nranks)
		return c
	case cl.comms[fr.Rank] != nil:
		c.err = f.ncclFail(c, ncclabi.InvalidUsage, "ncclCommInitRankConfig: rank %d of the unique id joined twice", fr.Rank)
		return c
	}
	cl.comms[fr.Rank] = c
	cl.joined++
	if cl.joined == cl.nranks {
		delete(n.cliques, fr.ID)
		f.ncclReady(cl, "ncclCommInitRankConfig")
	}
	return c
}

// ncclNewComm makes a communicator of rank on device, not yet ready.
func (f *Fake) ncclNewComm(device, rank int) *ncclComm {
	n := &f.nccl
	n.next += 0x10
	c := &ncclComm{raw: 0xc_0000 + n.next, rank: rank, device: device, seq: f.seq}
	if f.origins != nil {
		c.origin = callerOrigin()
	}
	if n.comms == nil {
		n.comms = make(map[uintptr]*ncclComm)
	}
	n.comms[c.raw] = c
	return c
}

// ncclReady makes every rank of cl ready, charging each device what
// NCCL's init takes, or fails them all.
func (f *Fake) ncclReady(cl *ncclClique, call string) {
	seen := map[int]int{}
	for _, c := range cl.comms {
		if r, dup := seen[c.device]; dup {
			f.ncclFailAll(cl.comms, ncclabi.InvalidUsage, "%s: Duplicate GPU detected: rank %d and rank %d both on device %d", call, r, c.rank, c.device)
			return
		}
		seen[c.device] = c.rank
	}
	for _, c := range cl.comms {
		charge := uint64(ncclInitCharge)
		c.first = !f.ncclLiveOn(c.device, c)
		if !c.first {
			charge = ncclFurtherCharge
		}
		if x := f.charge(c.device, charge); x != nil {
			f.ncclFailAll(cl.comms, ncclabi.UnhandledCudaError, "%s: Cuda failure 2 'out of memory' on device %d (rank %d): %s", call, c.device, c.rank, x.why)
			return
		}
		c.charged += charge
	}
	for _, c := range cl.comms {
		c.ready = true
	}
}

// ncclLiveOn reports whether a communicator other than c holds memory on
// device.
func (f *Fake) ncclLiveOn(device int, c *ncclComm) bool {
	for _, o := range f.nccl.comms {
		if o != c && o.device == device && o.charged > 0 {
			return true
		}
	}
	return false
}

// ncclFailAll fails every communicator of cs with r.
func (f *Fake) ncclFailAll(cs []*ncclComm, r ncclabi.Result, format string, args ...any) {
	for _, c := range cs {
		if c != nil && c.err == ncclabi.Success {
			c.err = f.ncclFail(c, r, format, args...)
		}
	}
}

// ncclPostOp posts c's part of an operation, matching it with the other
// ranks' parts posted before it.
func (f *Fake) ncclPostOp(c *ncclComm, fr *ncclabi.Frame) {
	cl := c.clique
	key := ncclKey{seq: c.issued}
	want := cl.nranks
	slot := c.rank
	switch fr.Call {
	case ncclabi.Send, ncclabi.Recv:
		want = 2
		peer := int(fr.Peer)
		if fr.Call == ncclabi.Send {
			if c.sent == nil {
				c.sent = make(map[int]int)
			}
			key = ncclKey{p2p: true, from: c.rank, to: peer, transfers: c.sent[peer]}
			c.sent[peer]++
			slot = 0
		} else {
			if c.recvd == nil {
				c.recvd = make(map[int]int)
			}
			key = ncclKey{p2p: true, from: peer, to: c.rank, transfers: c.recvd[peer]}
			c.recvd[peer]++
			slot = 1
		}
	default:
		c.issued++
	}
	if cl.open == nil {
		cl.open = make(map[ncclKey]*ncclOp)
	}
	op := cl.open[key]
	if op == nil {
		op = &ncclOp{key: key, clique: cl, parts: make([]*ncclPart, want)}
		cl.open[key] = op
	}
	c.pending++
	if op.parts[slot] != nil {
		// A rank sends to itself: NCCL allows it, both parts are c's.
		slot = 1 - slot
	}
	part := &ncclPart{comm: c}
	if fr.Call == ncclabi.CommSplit {
		// NCCL makes the new communicator at the call but sets newcomm to
		// NULL until the split is done: the caller learns it once the
		// parent is no longer in progress (ncclSplitDone).
		part.out = &fr.Out
		atomic.StoreUint64(part.out, 0)
		if fr.Color != ncclabi.SplitNoColor {
			part.child = f.ncclNewComm(c.device, -1)
		}
	}
	part.f = *fr
	op.parts[slot] = part
	op.posted++
	if why := ncclMismatch(op, slot); why != "" {
		delete(cl.open, key)
		var cs []*ncclComm
		for _, p := range op.parts {
			if p != nil {
				p.comm.pending--
				cs = append(cs, p.comm, p.child)
			}
		}
		f.ncclFailAll(cs, ncclabi.InvalidUsage, "%s", why)
		for _, p := range op.parts {
			p.splitDone()
		}
		return
	}
	if op.posted < want {
		return
	}
	delete(cl.open, key)
	f.ncclMatched(op)
}

// ncclMismatch says how part slot of op disagrees with the parts posted
// before it, or "" when it agrees.
func ncclMismatch(op *ncclOp, slot int) string {
	p := op.parts[slot].f
	for r, q := range op.parts {
		if q == nil || r == slot {
			continue
		}
		o := q.f
		if op.key.p2p {
			if p.Count != o.Count || p.Type != o.Type {
				return fmt.Sprintf("ncclSend and ncclRecv #%d from rank %d to rank %d disagree: %s %d × %s, %s %d × %s",
					op.key.transfers+1, op.key.from, op.key.to, o.Call, o.Count, o.Type, p.Call, p.Count, p.Type)
			}
			continue
		}
		if p.Call != o.Call || p.Count != o.Count || p.Type != o.Type || (ncclReduces(p.Call) && p.Op != o.Op) || (ncclRooted(p.Call) && p.Peer != o.Peer) {
			return fmt.Sprintf("collective #%d of the communicator differs between ranks: rank %d called %s, rank %d %s (every rank must call the same collectives in the same order, with the same count, type, operation and root)",
				op.key.seq+1, q.comm.rank, describeNCCL(o), op.parts[slot].comm.rank, describeNCCL(p))
		}
	}
	return ""
}

func ncclReduces(c ncclabi.Call) bool {
	return c == ncclabi.AllReduce || c == ncclabi.Reduce || c == ncclabi.ReduceScatter
}

func ncclRooted(c ncclabi.Call) bool { return c == ncclabi.Broadcast || c == ncclabi.Reduce }

// describeNCCL names a call and the arguments every rank must agree on.
func describeNCCL(fr ncclabi.Frame) string {
	s := fmt.Sprintf("%s(count %d, %s", fr.Call, fr.Count, fr.Type)
	if ncclReduces(fr.Call) {
		s += ", " + fr.Op.String()
	}
	if ncclRooted(fr.Call) {
		s += fmt.Sprintf(", root %d", fr.Peer)
	}
	if fr.Call == ncclabi.CommSplit {
		s = "ncclCommSplit("
	}
	return s + ")"
}

// ncclMatched runs what every rank posted: a split makes the new
// communicators; an operation on memory takes each communicator's first
// charge and queues each rank's part on its stream.
func (f *Fake) ncclMatched(op *ncclOp) {
	for _, p := range op.parts {
		p.comm.pending--
	}
	if op.parts[0].f.Call == ncclabi.CommSplit {
		f.ncclSplit(op)
		return
	}
	for _, p := range op.parts {
		c := p.comm
		if c.used {
			continue
		}
		var charge uint64
		if c.first {
			charge = ncclFirstCharge
		}
		if x := f.charge(c.device, charge); x != nil {
			f.ncclFailAll([]*ncclComm{c}, ncclabi.UnhandledCudaError, "%s: Cuda failure 2 'out of memory' on device %d (rank %d): %s", p.f.Call, c.device, c.rank, x.why)
			continue
		}
		c.charged += charge
		c.used = true
	}
	for _, p := range op.parts {
		if p.comm.err != ncclabi.Success {
			op.failed = fail(700, "%s: rank %d failed before its part ran: %s", p.f.Call, p.comm.rank, p.comm.last)
		}
	}
	for i, p := range op.parts {
		s := cudart.Stream(p.f.Stream)
		c := p.comm
		if c.queued == nil {
			c.queued = make(map[cudart.Stream]int)
		}
		c.queued[canonical(s)]++
		if x := f.enqueue(c.device, s, calls.CuLaunchKernel, func() *failure { return f.ncclRun(op, i) }); x != nil {
			c.queued[canonical(s)]--
			f.ncclFailAll([]*ncclComm{c}, ncclabi.UnhandledCudaError, "%s: the launch on device %d failed: %s", p.f.Call, c.device, x.why)
			op.failed = fail(700, "%s: rank %d's part could not be queued: %s", p.f.Call, c.rank, x.why)
		}
	}
}

// splitDone hands a split's new communicator to its caller, as NCCL's
// split job writes newcomm when it ends, done or failed: a failed one too,
// which the caller must abort. It does nothing for any other part.
func (p *ncclPart) splitDone() {
	if p == nil || p.out == nil {
		return
	}
	if p.child != nil {
		atomic.StoreUint64(p.out, uint64(p.child.raw))
	}
	p.out = nil
}
