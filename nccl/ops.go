package nccl

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// Op is one operation on a communicator, made by its ...Op methods or a
// Lent's, for Group. The zero Op is refused.
type Op struct {
	c *Comm
	f ncclabi.Frame
	// g and tok are the lease of a Lent's operation, checked before it is
	// posted; g is nil for a Comm's.
	g   Guard
	tok uint64
}

// String names the call and its arguments, for messages.
func (o Op) String() string {
	f := o.f
	s := fmt.Sprintf("%s(count %d, %s", f.Call, f.Count, DataType(f.Type))
	switch f.Call {
	case ncclabi.AllReduce, ncclabi.ReduceScatter:
		s += ", " + RedOp(f.Op).String()
	case ncclabi.Reduce:
		s += fmt.Sprintf(", %s, root %d", RedOp(f.Op), f.Peer)
	case ncclabi.Broadcast:
		s += fmt.Sprintf(", root %d", f.Peer)
	case ncclabi.Send, ncclabi.Recv:
		s += fmt.Sprintf(", peer %d", f.Peer)
	}
	s += ")"
	if o.c != nil {
		s += " on " + o.c.String()
	}
	return s
}

func (c *Comm) op(call ncclabi.Call, send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, peer int, s cudart.Stream) Op {
	return Op{c: c, f: ncclabi.Frame{Call: call, Device: c.device, Send: uintptr(send), Recv: uintptr(recv), Count: count,
		Type: ncclabi.DataType(t), Op: ncclabi.RedOp(op), Peer: int32(peer), Stream: uintptr(s)}}
}

// AllReduceOp is AllReduce, for Group.
func (c *Comm) AllReduceOp(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, s cudart.Stream) Op {
	return c.op(ncclabi.AllReduce, send, recv, count, t, op, 0, s)
}

// AllReduce reduces count elements of type t of every rank's send with op
// and writes the result to every rank's recv (ncclAllReduce), queued on
// stream s; send and recv may be the same buffer.
func (c *Comm) AllReduce(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, s cudart.Stream) error {
	return c.l.Group(c.AllReduceOp(send, recv, count, t, op, s))
}

// AllGatherOp is AllGather, for Group.
func (c *Comm) AllGatherOp(send, recv cudart.DevicePtr, sendCount uint64, t DataType, s cudart.Stream) Op {
	return c.op(ncclabi.AllGather, send, recv, sendCount, t, 0, 0, s)
}

// AllGather writes every rank's sendCount elements of send, in rank order,
// to every rank's recv, which holds Size()·sendCount elements
// (ncclAllGather), queued on stream s.
func (c *Comm) AllGather(send, recv cudart.DevicePtr, sendCount uint64, t DataType, s cudart.Stream) error {
	return c.l.Group(c.AllGatherOp(send, recv, sendCount, t, s))
}

// ReduceScatterOp is ReduceScatter, for Group.
func (c *Comm) ReduceScatterOp(send, recv cudart.DevicePtr, recvCount uint64, t DataType, op RedOp, s cudart.Stream) Op {
	return c.op(ncclabi.ReduceScatter, send, recv, recvCount, t, op, 0, s)
}

// ReduceScatter reduces every rank's send, Size()·recvCount elements, with
// op, and writes block r of recvCount elements of the result to rank r's
// recv (ncclReduceScatter), queued on stream s.
func (c *Comm) ReduceScatter(send, recv cudart.DevicePtr, recvCount uint64, t DataType, op RedOp, s cudart.Stream) error {
	return c.l.Group(c.ReduceScatterOp(send, recv, recvCount, t, op, s))
}

// BroadcastOp is Broadcast, for Group.
func (c *Comm) BroadcastOp(send, recv cudart.DevicePtr, count uint64, t DataType, root int, s cudart.Stream) Op {
	return c.op(ncclabi.Broadcast, send, recv, count, t, 0, root, s)
}

// Broadcast writes root's count elements of send to every rank's recv
// (ncclBroadcast), queued on stream s; send is read on root only.
func (c *Comm) Broadcast(send, recv cudart.DevicePtr, count uint64, t DataType, root int, s cudart.Stream) error {
	return c.l.Group(c.BroadcastOp(send, recv, count, t, root, s))
}

// ReduceOp is Reduce, for Group.
func (c *Comm) ReduceOp(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, root int, s cudart.Stream) Op {
	return c.op(ncclabi.Reduce, send, recv, count, t, op, root, s)
}

// Reduce reduces count elements of every rank's send with op into root's
// recv (ncclReduce), queued on stream s; recv is written on root only.
func (c *Comm) Reduce(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, root int, s cudart.Stream) error {
	return c.l.Group(c.ReduceOp(send, recv, count, t, op, root, s))
}

// SendOp is Send, for Group.
func (c *Comm) SendOp(send cudart.DevicePtr, count uint64, t DataType, peer int, s cudart.Stream) Op {
	return c.op(ncclabi.Send, send, 0, count, t, 0, peer, s)
}

// Send sends count elements of send to rank peer (ncclSend), queued on
// stream s; peer receives them with Recv. A rank that both sends and
// receives, or that exchanges with several peers, puts its transfers in one
// Group: NCCL may otherwise wait for a receive the rank has not posted.
func (c *Comm) Send(send cudart.DevicePtr, count uint64, t DataType, peer int, s cudart.Stream) error {
	return c.l.Group(c.SendOp(send, count, t, peer, s))
}

// RecvOp is Recv, for Group.
func (c *Comm) RecvOp(recv cudart.DevicePtr, count uint64, t DataType, peer int, s cudart.Stream) Op {
	return c.op(ncclabi.Recv, 0, recv, count, t, 0, peer, s)
}

// Recv receives count elements from rank peer into recv (ncclRecv), queued
// on stream s.
func (c *Comm) Recv(recv cudart.DevicePtr, count uint64, t DataType, peer int, s cudart.Stream) error {
	return c.l.Group(c.RecvOp(recv, count, t, peer, s))
}

// Group runs ops as one NCCL group (ncclGroupStart, the operations,
// ncclGroupEnd, on one locked OS thread): what one goroutine does to drive
// several devices' communicators at once, or to post a rank's sends and
// receives together. It returns once every operation is posted and matched
// by the other ranks, its work queued on its stream, or with the first
// error: past the bound of the group's communicators (the shortest
// WithTimeout), the error wraps ErrTimeout, the non-blocking communicators
// still in progress aborted, the blocking ones closed (see
// WithInlineLaunch). One op runs without a group. Every op must be of a
// communicator of l, all non-blocking or all blocking (NCCL gives a group
// one mode: it refuses to mix them for inits and splits, and a blocking
// communicator in a non-blocking group of operations is left in
// ncclInProgress). A Lent's op whose lease has ended refuses the whole
// group before anything is posted, with the Guard's error.
func (l *Library) Group(ops ...Op) error {
	if len(ops) == 0 {
		return nil
	}
	g := groups.Get().(*group)
	err := l.group(g, ops)
	if g.fs != nil {
		g.comms = g.comms[:0]
		g.fs = g.fs[:0]
		groups.Put(g)
	}
	return err
}

// group is a Group's scratch, from a pool: a call allocates nothing of
// its own.
type group struct {
	comms []*Comm // the ops' communicators, in the order of their locks, once each
	fs    []ncclabi.Frame
}

var groups = sync.Pool{New: func() any { return new(group) }}

// group runs Group with g's scratch; it sets g.fs to nil where a call
// given up on keeps it (doBlocking).
func (l *Library) group(g *group, ops []Op) error {
	inline := ops[0].c != nil && ops[0].c.inline
	timeout := DefaultTimeout
	for i, o := range ops {
		if o.c == nil || o.c.l != l {
			return fmt.Errorf("%w: op %d of %d is not of a communicator of this library", ErrInvalidOption, i+1, len(ops))
		}
		if o.c.inline != inline {
			return fmt.Errorf("%w: op %d of %d is on %s, op 1 on %s: blocking (WithInlineLaunch) and non-blocking communicators in one group", ErrInvalidOption, i+1, len(ops), kind(o.c.inline), kind(inline))
		}
		if i == 0 || o.c.timeout < timeout {
			timeout = o.c.timeout
		}
	}
	for _, o := range ops {
		g.comms = append(g.comms, o.c)
	}
	g.comms = sortUnique(g.comms, g.comms)
	if err := lockSorted(g.comms); err != nil {
		return err
	}
	defer unlockSorted(g.comms)
	for _, o := range ops {
		if o.g != nil {
			if err := (Lent{c: o.c, g: o.g, tok: o.tok}).leaseErr(); err != nil {
				return err
			}
		}
	}
	fs := g.fs[:0]
	if len(ops) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupStart})
	}
	for _, o := range ops {
		f := o.f
		f.Comm = o.c.raw
		fs = append(fs, f)
	}
	if len(ops) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupEnd})
	}
	g.fs = fs
	// The group is named only for an error: naming it at every call made
	// a third of the call's allocations (BenchmarkGroupAllReduce).
	call := func() string { return describe(ops) }
	var n int
	var derr error
	if inline {
		var late error
		if n, derr, late = l.doBlocking(fs, g.comms, timeout, call); late != nil {
			g.fs = nil
			return late
		}
	} else {
		n, derr = l.be.Do(fs)
	}
	if derr != nil {
		return fmt.Errorf("nccl: %s: selecting device %d: %w", call(), fs[n].Device, derr)
	}
	if last := fs[n-1]; last.Result != ncclabi.Success && last.Result != ncclabi.InProgress {
		if i := n - 1 - btoi(len(ops) > 1); i >= 0 && i < len(ops) {
			return l.fail(last.Result, ops[i].String(), ops[i].c)
		}
		return l.fail(last.Result, call(), nil)
	}
	if inline {
		// A blocking group end returns once its work is queued.
		return nil
	}
	return l.wait(g.comms, call, timeout)
}

// kind names a communicator's mode, for messages.
func kind(inline bool) string {
	if inline {
		return "a blocking communicator"
	}
	return "a non-blocking one"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// describe names a group's operations, for messages.
func describe(ops []Op) string {
	if len(ops) == 1 {
		return ops[0].String()
	}
	var s []string
	for _, o := range ops {
		s = append(s, o.String())
	}
	return "group {" + strings.Join(s, "; ") + "}"
}
