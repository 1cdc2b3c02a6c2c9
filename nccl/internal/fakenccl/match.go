package fakenccl

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// clique is the ranks of one communicator.
type clique struct {
	nranks int
	comms  []*comm // by rank; nil until the rank joined
	joined int
	// open are the operations posted by some ranks and not yet by all.
	open map[key]*op
}

// key names an operation across ranks: a collective by its place in the
// order, a transfer by its sender, receiver and count between them.
type key struct {
	p2p       bool
	window    bool // a window, by its place in the order of windows
	seq       int
	from, to  int
	transfers int
}

// op is one operation of a clique, as each rank posted it.
type op struct {
	key    key
	parts  []*part // by rank; the sender and the receiver of a transfer
	posted int
	run    *run // made when matched, for its pieces
}

// part is one rank's call of an operation.
type part struct {
	comm  *comm
	f     ncclabi.Frame
	child *comm // a split's new communicator; nil for NCCL_SPLIT_NOCOLOR
	// out is the caller's newcomm of a split, which NCCL writes once the
	// split is done (or failed), not when ncclCommSplit returns, or its
	// window, written once every rank registered it.
	out *uint64
	// mem is the allocation that holds a window.
	mem cudarttest.Allocation
}

// post posts the calls of one group (or one call outside any) to their
// cliques. A non-blocking group reports InProgress until each of them is
// matched by every rank; a blocking one waits for that (await).
func (b *Backend) post(frames []*ncclabi.Frame, blocking bool) ncclabi.Result {
	if r := b.windowChecks(frames); r != ncclabi.Success {
		return r
	}
	var touched []*comm
	for _, fr := range frames {
		if fr.Call == ncclabi.CommInitRankConfig {
			c, err := b.init(fr)
			if err != nil {
				return b.fail(nil, ncclabi.UnhandledCudaError, "ncclCommInitRankConfig on device %d: %v", fr.Device, err)
			}
			touched = append(touched, c)
			continue
		}
		c := b.comms[fr.Comm]
		b.postOp(c, fr)
		touched = append(touched, c)
	}
	if blocking {
		return b.await(touched, frames[len(frames)-1].Call)
	}
	res := ncclabi.Success
	for _, c := range touched {
		if c.state() == ncclabi.InProgress {
			res = ncclabi.InProgress
		}
	}
	return res
}

// await waits, mu released, until none of cs has an operation unmatched,
// and returns the first failure of theirs: a blocking call's return.
func (b *Backend) await(cs []*comm, call ncclabi.Call) ncclabi.Result {
	for {
		waiting := false
		for _, c := range cs {
			if c.pending > 0 && c.err == ncclabi.Success && !c.dropped.Load() {
				waiting = true
			}
		}
		if !waiting {
			break
		}
		b.settled.Wait()
	}
	for _, c := range cs {
		switch {
		case c.err != ncclabi.Success:
			return c.err
		case c.dropped.Load():
			return b.fail(nil, ncclabi.InternalError, "%s: comm 0x%x was aborted or destroyed during its own blocking call", call, c.raw)
		}
	}
	return ncclabi.Success
}

// init makes rank fr.Rank's communicator and joins it to the clique of its
// id, which is ready once every rank joined.
func (b *Backend) init(fr *ncclabi.Frame) (*comm, error) {
	c, err := b.newComm(fr.Device, int(fr.Rank), "ncclCommInitRankConfig (nccl.Library.InitAll or InitRank)")
	if err != nil {
		return nil, err
	}
	fr.Out = uint64(c.raw)
	cl := b.cliques[fr.ID]
	if cl == nil {
		cl = &clique{nranks: int(fr.NRanks), comms: make([]*comm, fr.NRanks)}
		b.cliques[fr.ID] = cl
	}
	c.clique = cl
	switch {
	case cl.nranks != int(fr.NRanks):
		c.err = b.fail(c, ncclabi.InvalidUsage, "ncclCommInitRankConfig: rank %d says %d ranks, the ranks before it %d", fr.Rank, fr.NRanks, cl.nranks)
		return c, nil
	case cl.comms[fr.Rank] != nil:
		c.err = b.fail(c, ncclabi.InvalidUsage, "ncclCommInitRankConfig: rank %d of the unique id joined twice", fr.Rank)
		return c, nil
	}
	cl.comms[fr.Rank] = c
	cl.joined++
	if cl.joined == cl.nranks {
		delete(b.cliques, fr.ID)
		b.ready(cl, "ncclCommInitRankConfig")
	}
	return c, nil
}

// postOp posts c's part of an operation, matching it with the other ranks'
// parts posted before it.
func (b *Backend) postOp(c *comm, fr *ncclabi.Frame) {
	cl := c.clique
	k := key{seq: c.issued}
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
			k = key{p2p: true, from: c.rank, to: peer, transfers: c.sent[peer]}
			c.sent[peer]++
			slot = 0
		} else {
			if c.recvd == nil {
				c.recvd = make(map[int]int)
			}
			k = key{p2p: true, from: peer, to: c.rank, transfers: c.recvd[peer]}
			c.recvd[peer]++
			slot = 1
		}
	case ncclabi.CommWindowRegister:
		k = key{window: true, seq: c.windows}
		c.windows++
	default:
		c.issued++
	}
	if cl.open == nil {
		cl.open = make(map[key]*op)
	}
	o := cl.open[k]
	if o == nil {
		o = &op{key: k, parts: make([]*part, want)}
		cl.open[k] = o
	}
	c.pending++
	if o.parts[slot] != nil {
		// A rank sends to itself: NCCL allows it, both parts are c's.
		slot = 1 - slot
	}
	p := &part{comm: c}
	if fr.Call == ncclabi.CommSplit {
		// NCCL makes the new communicator at the call but sets newcomm to
		// NULL until the split is done: the caller learns it once the
		// parent is no longer in progress (splitDone).
		p.out = &fr.Out
		atomic.StoreUint64(p.out, 0)
		if fr.Color != ncclabi.SplitNoColor {
			child, err := b.newComm(c.device, -1, "ncclCommSplit (nccl.Comm.Split, or InitAll or InitRank with WithInlineLaunch, which split a non-blocking communicator)")
			if err != nil {
				c.err = b.fail(c, ncclabi.UnhandledCudaError, "ncclCommSplit on device %d: %v", c.device, err)
			} else {
				child.blocking = fr.Config.Blocking == 1
			}
			p.child = child
		}
	}
	if fr.Call == ncclabi.CommWindowRegister {
		// NCCL writes the window from its thread once every rank has
		// registered: the caller reads it once c is no longer in
		// progress.
		p.out = &fr.Out
		atomic.StoreUint64(p.out, 0)
		p.mem, _ = b.lib.Allocation(cudart.DevicePtr(fr.Send))
	}
	p.f = *fr
	o.parts[slot] = p
	o.posted++
	if why := mismatch(o, slot); why != "" {
		delete(cl.open, k)
		var cs []*comm
		for _, q := range o.parts {
			if q != nil {
				q.comm.pending--
				cs = append(cs, q.comm, q.child)
			}
		}
		b.failAll(cs, ncclabi.InvalidUsage, "%s", why)
		for _, q := range o.parts {
			q.splitDone()
		}
		return
	}
	if o.posted < want {
		return
	}
	if o.key.window && b.unshared(o) {
		return
	}
	delete(cl.open, k)
	b.matched(o)
}

// splitDone hands a split's new communicator to its caller, as NCCL's
// split job writes newcomm when it ends, done or failed: a failed one too,
// which the caller must abort. It does nothing for any other part.
func (p *part) splitDone() {
	if p == nil || p.out == nil {
		return
	}
	if p.child != nil {
		atomic.StoreUint64(p.out, uint64(p.child.raw))
	}
	p.out = nil
}

// mismatch says how part slot of o disagrees with the parts posted before
// it, or "" when it agrees.
func mismatch(o *op, slot int) string {
	p := o.parts[slot].f
	for r, q := range o.parts {
		if q == nil || r == slot {
			continue
		}
		other := q.f
		if o.key.window {
			if why := windowsAgree(o.parts[slot], q); why != "" {
				return fmt.Sprintf("window #%d of the communicator differs between ranks: %s", o.key.seq+1, why)
			}
			continue
		}
		if o.key.p2p {
			if p.Count != other.Count || p.Type != other.Type {
				return fmt.Sprintf("ncclSend and ncclRecv #%d from rank %d to rank %d disagree: %s %d × %s, %s %d × %s",
					o.key.transfers+1, o.key.from, o.key.to, other.Call, other.Count, other.Type, p.Call, p.Count, p.Type)
			}
			continue
		}
		if p.Call != other.Call || p.Count != other.Count || p.Type != other.Type || (reduces(p.Call) && p.Op != other.Op) || (rooted(p.Call) && p.Peer != other.Peer) {
			return fmt.Sprintf("collective #%d of the communicator differs between ranks: rank %d called %s, rank %d %s (every rank must call the same collectives in the same order, with the same count, type, operation and root)",
				o.key.seq+1, q.comm.rank, describe(other), o.parts[slot].comm.rank, describe(p))
		}
	}
	return ""
}

func reduces(c ncclabi.Call) bool {
	return c == ncclabi.AllReduce || c == ncclabi.Reduce || c == ncclabi.ReduceScatter
}

func rooted(c ncclabi.Call) bool { return c == ncclabi.Broadcast || c == ncclabi.Reduce }

// describe names a call and the arguments every rank must agree on.
func describe(fr ncclabi.Frame) string {
	if fr.Call == ncclabi.CommSplit {
		return "ncclCommSplit()"
	}
	s := fmt.Sprintf("%s(count %d, %s", fr.Call, fr.Count, fr.Type)
	if reduces(fr.Call) {
		s += ", " + fr.Op.String()
	}
	if rooted(fr.Call) {
		s += fmt.Sprintf(", root %d", fr.Peer)
	}
	return s + ")"
}

// matched runs what every rank posted: a split makes the new
// communicators; an operation on memory takes each communicator's first
// charge and queues each rank's piece on its stream.
func (b *Backend) matched(o *op) {
	for _, p := range o.parts {
		p.comm.pending--
	}
	switch o.parts[0].f.Call {
	case ncclabi.CommSplit:
		b.split(o)
		return
	case ncclabi.CommWindowRegister:
		b.windowsMade(o)
		return
	}
	for _, p := range o.parts {
		c := p.comm
		if c.used || c.err != ncclabi.Success {
			continue
		}
		charge := uint64(FurtherFirstCharge)
		if c.first {
			charge = FirstCharge
		}
		if !b.charge(c, charge, p.f.Call.String(), []*comm{c}) {
			continue
		}
		c.used = true
	}
	o.run = newRun(o)
	works := make([]cudarttest.Work, len(o.parts))
	for i, p := range o.parts {
		c := p.comm
		if c.err != ncclabi.Success {
			o.run.refuse(fmt.Sprintf("%s: rank %d failed before its part ran: %s", p.f.Call, c.rank, c.last))
		}
		works[i] = o.run.pieces[i].work()
	}
	// Every rank's piece at once: a synchronisation of one rank's device
	// in between would run its piece without its peers'.
	for i, err := range b.lib.EnqueueAll(works...) {
		p := o.parts[i]
		c := p.comm
		if err != nil {
			b.failAll([]*comm{c}, ncclabi.UnhandledCudaError, "%s: the launch on device %d failed: %v", p.f.Call, c.device, err)
			o.run.refuse(fmt.Sprintf("%s: rank %d's part could not be queued: %v", p.f.Call, c.rank, err))
			continue
		}
		c.queued = append(c.queued, o.run.pieces[i])
	}
}

// split makes the communicators of a matched ncclCommSplit: one per color,
// ranks ordered by key, then by their rank in the parent, as NCCL's
// commGetSplitInfo orders them.
func (b *Backend) split(o *op) {
	byColor := map[int32][]*part{}
	for _, p := range o.parts {
		if p.f.Color != ncclabi.SplitNoColor && p.child != nil {
			byColor[p.f.Color] = append(byColor[p.f.Color], p)
		}
	}
	colors := make([]int32, 0, len(byColor))
	for color := range byColor {
		colors = append(colors, color)
	}
	sort.Slice(colors, func(a, b int) bool { return colors[a] < colors[b] })
	for _, color := range colors {
		parts := byColor[color]
		sort.SliceStable(parts, func(a, b int) bool { return parts[a].f.Key < parts[b].f.Key })
		cl := &clique{nranks: len(parts), comms: make([]*comm, len(parts)), joined: len(parts)}
		for r, p := range parts {
			p.child.rank, p.child.clique = r, cl
			cl.comms[r] = p.child
		}
		b.ready(cl, "ncclCommSplit")
	}
	for _, p := range o.parts {
		p.splitDone()
	}
}
