package cudarttest

import (
	"fmt"
	"sort"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// ncclRun is part i of op, run on its stream: it runs the other ranks'
// streams until their parts ran too, and the last part to run computes the
// operation. A part that cannot run (its device faulted, its communicator
// aborted before its stream reached it) fails every part that runs.
func (f *Fake) ncclRun(op *ncclOp, i int) *failure {
	p := op.parts[i]
	p.comm.queued[canonical(cudart.Stream(p.f.Stream))]--
	if op.failed != nil {
		return op.failed
	}
	p.ready = true
	op.ready++
	for _, q := range op.parts {
		if q.ready || op.failed != nil {
			continue
		}
		if x := f.drain(q.comm.device, cudart.Stream(q.f.Stream)); x != nil && !q.ready {
			op.failed = fail(700, "%s: rank %d's stream 0x%x on device %d failed before its part: %s", q.f.Call, q.comm.rank, q.f.Stream, q.comm.device, x.why)
		}
		if !q.ready && op.failed == nil {
			op.failed = fail(700, "%s: rank %d's part did not run when its stream 0x%x on device %d was synchronised", q.f.Call, q.comm.rank, q.f.Stream, q.comm.device)
		}
	}
	if op.failed != nil {
		return op.failed
	}
	if !op.done {
		op.done = true
		op.failed = f.ncclCompute(op)
	}
	return op.failed
}

// ncclCompute computes op on the CPU: every read first, then every write,
// so that buffers used in place read their values from before.
func (f *Fake) ncclCompute(op *ncclOp) *failure {
	p0 := op.parts[0].f
	t, n := p0.Type, p0.Count
	es := t.Size()
	bytes := n * es
	nr := uint64(len(op.parts))
	read := func(p *ncclPart, ptr uintptr, size uint64, what string) ([]byte, *failure) {
		b := make([]byte, size)
		k := &KernelContext{f: f, device: p.comm.device, name: p.f.Call.String()}
		if size > 0 && !k.Read(cudart.DevicePtr(ptr), b) {
			return nil, fail(700, "%s on rank %d (device %d) reads its %s: %s", p.f.Call, p.comm.rank, p.comm.device, what, k.fault.why)
		}
		return b, nil
	}
	write := func(p *ncclPart, ptr uintptr, b []byte) *failure {
		k := &KernelContext{f: f, device: p.comm.device, name: p.f.Call.String()}
		if len(b) > 0 && !k.Write(cudart.DevicePtr(ptr), b) {
			return fail(700, "%s on rank %d (device %d) writes its recvbuff: %s", p.f.Call, p.comm.rank, p.comm.device, k.fault.why)
		}
		return nil
	}
	if op.key.p2p {
		b, x := read(op.parts[0], op.parts[0].f.Send, bytes, "sendbuff")
		if x != nil {
			return x
		}
		return write(op.parts[1], op.parts[1].f.Recv, b)
	}
	sendBytes := bytes
	switch p0.Call {
	case ncclabi.ReduceScatter:
		sendBytes = bytes * nr
	case ncclabi.Broadcast:
		sendBytes = 0
	}
	ins := make([][]byte, nr)
	for r, p := range op.parts {
		size := sendBytes
		if p0.Call == ncclabi.Broadcast && r == int(p0.Peer) {
			size = bytes
		}
		var x *failure
		if ins[r], x = read(p, p.f.Send, size, "sendbuff"); x != nil {
			return x
		}
	}
	outs := make([][]byte, nr)
	switch p0.Call {
	case ncclabi.AllReduce, ncclabi.Reduce:
		out := make([]byte, bytes)
		ncclabi.Combine(out, ins, n, t, p0.Op)
		for r := range outs {
			if p0.Call == ncclabi.AllReduce || r == int(p0.Peer) {
				outs[r] = out
			}
		}
	case ncclabi.Broadcast:
		for r := range outs {
			outs[r] = ins[p0.Peer]
		}
	case ncclabi.AllGather:
		out := make([]byte, 0, bytes*nr)
		for _, in := range ins {
			out = append(out, in...)
		}
		for r := range outs {
			outs[r] = out
		}
	case ncclabi.ReduceScatter:
		out := make([]byte, bytes*nr)
		ncclabi.Combine(out, ins, n*nr, t, p0.Op)
		for r := range outs {
			outs[r] = out[uint64(r)*bytes : uint64(r+1)*bytes]
		}
	}
	for r, p := range op.parts {
		if outs[r] == nil {
			continue
		}
		if x := write(p, p.f.Recv, outs[r]); x != nil {
			return x
		}
	}
	return nil
}

// ncclSplit makes the communicators of a matched ncclCommSplit: one per
// color, ranks ordered by key, then by their rank in the parent.
func (f *Fake) ncclSplit(op *ncclOp) {
	byColor := map[int32][]*ncclPart{}
	for _, p := range op.parts {
		if p.f.Color != ncclabi.SplitNoColor {
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
		cl := &ncclClique{nranks: len(parts), comms: make([]*ncclComm, len(parts)), joined: len(parts)}
		for r, p := range parts {
			p.child.rank, p.child.clique = r, cl
			cl.comms[r] = p.child
		}
		f.ncclReady(cl, "ncclCommSplit")
	}
	for _, p := range op.parts {
		p.splitDone()
	}
}

// ncclFinalize flushes c's queued operations, running their streams, as
// ncclCommFinalize waits for them; an operation not matched yet leaves it
// in progress.
func (f *Fake) ncclFinalize(c *ncclComm) ncclabi.Result {
	if c.pending > 0 {
		return ncclabi.InProgress
	}
	for s, n := range c.queued {
		if n == 0 {
			continue
		}
		if x := f.drain(c.device, s); x != nil {
			return f.ncclFail(c, ncclabi.UnhandledCudaError, "ncclCommFinalize: stream 0x%x on device %d: %s", uintptr(s), c.device, x.why)
		}
	}
	c.finalized = true
	return ncclabi.Success
}

// ncclDrop frees c (abort or destroy): its memory goes back to its device,
// its posted parts leave the operations waiting for them, whose other
// ranks stay in progress until their own bound.
func (f *Fake) ncclDrop(c *ncclComm) {
	delete(f.nccl.comms, c.raw)
	f.devs[c.device].used -= c.charged
	c.charged = 0
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
					p.child.err = f.ncclFail(p.child, ncclabi.InternalError, "ncclCommSplit: its parent 0x%x was aborted before every rank split", c.raw)
				}
				p.splitDone()
				op.parts[i] = nil
				op.posted--
			}
		}
		if op.posted == 0 {
			delete(cl.open, k)
		}
	}
}

// ncclRegister is ncclCommRegister: the buffer must be device memory of the
// communicator's device.
func (f *Fake) ncclRegister(c *ncclComm, fr *ncclabi.Frame) ncclabi.Result {
	r := f.containing(uint64(fr.Send))
	switch {
	case fr.Size == 0:
		return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommRegister: size 0")
	case r == nil || r.kind == kindHostAlias || fr.Size > r.end()-uint64(fr.Send):
		return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommRegister: %d B at 0x%x is not inside one device allocation", fr.Size, fr.Send)
	case r.device != c.device:
		return f.ncclFail(c, ncclabi.InvalidArgument, "ncclCommRegister: buffer 0x%x is on device %d, the communicator on device %d", fr.Send, r.device, c.device)
	}
	if c.regs == nil {
		c.regs = make(map[uintptr]ncclReg)
	}
	f.nccl.next += 0x10
	h := 0xd_0000 + f.nccl.next
	c.regs[h] = ncclReg{ptr: cudart.DevicePtr(fr.Send), size: fr.Size}
	fr.Out = uint64(h)
	return ncclabi.Success
}

// ncclLeaks lists the communicators never destroyed, for CheckLeaks.
func (f *Fake) ncclLeaks(add func(seq int, text, origin string)) {
	for raw, c := range f.nccl.comms {
		add(c.seq, fmt.Sprintf("NCCL communicator 0x%x (rank %d) on device %d, never destroyed", raw, c.rank, c.device), c.origin.String())
	}
}
