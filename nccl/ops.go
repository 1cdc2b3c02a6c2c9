package nccl

import (
	"fmt"
	"strings"

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
// WithTimeout), the communicators still in progress are aborted and the
// error wraps ErrTimeout. One op runs without a group. Every op must be of
// a communicator of l. A Lent's op whose lease has ended refuses the whole
// group before anything is posted, with the Guard's error.
func (l *Library) Group(ops ...Op) error {
	if len(ops) == 0 {
		return nil
	}
	comms := make([]*Comm, 0, len(ops))
	timeout := DefaultTimeout
	for i, o := range ops {
		if o.c == nil || o.c.l != l {
			return fmt.Errorf("%w: op %d of %d is not of a communicator of this library", ErrInvalidOption, i+1, len(ops))
		}
		comms = append(comms, o.c)
		timeout = min(timeout, o.c.timeout)
	}
	unlock, err := lockAll(comms)
	if err != nil {
		return err
	}
	defer unlock()
	for _, o := range ops {
		if o.g != nil {
			if err := (Lent{c: o.c, g: o.g, tok: o.tok}).leaseErr(); err != nil {
				return err
			}
		}
	}
	fs := make([]ncclabi.Frame, 0, len(ops)+2)
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
	// The group is named only for an error: naming it at every call made
	// a third of the call's allocations (BenchmarkGroupAllReduce).
	call := func() string { return describe(ops) }
	n, derr := l.be.Do(fs)
	if derr != nil {
		return fmt.Errorf("nccl: %s: selecting device %d: %w", call(), fs[n].Device, derr)
	}
	if last := fs[n-1]; last.Result != ncclabi.Success && last.Result != ncclabi.InProgress {
		if i := n - 1 - btoi(len(ops) > 1); i >= 0 && i < len(ops) {
			return l.fail(last.Result, ops[i].String(), ops[i].c)
		}
		return l.fail(last.Result, call(), nil)
	}
	return l.wait(comms, call, timeout)
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
