package nccl

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// Guard tells a lent communicator whether its lease still holds:
// LeaseErr(tok) is why lease tok has ended, nil while it holds. A pool's
// slot is one, its generation the lease's token. It is asked under the
// communicators' locks, so it must not call them. It is an alias of an
// unnamed interface, the same type as pool.Guard, so that a slot's
// communicator (SlotComms) lends a Lent to pool.Attached without this
// package importing pool.
type Guard = interface {
	LeaseErr(tok uint64) error
}

// Lent is a slot's communicator lent to one request (pool.Attached[nccl.Lent],
// with SlotComms), from Acquire to Release. Its operations are the
// communicator's, with two differences:
//
//   - They are queued on the slot's stream, which they do not take: the
//     slot knows that a request's work is done by that stream alone (its
//     Release waits for it), and work queued elsewhere could still run
//     when the next request begins.
//   - Once its Guard says the lease has ended, each fails with an error
//     wrapping the Guard's (pool.ErrSlotReleased for a slot), before
//     anything reaches NCCL, though the next lease works on the same
//     communicator. An ...Op of it is checked when Group posts it.
//
// It does not split, destroy or abort the communicator, which is its
// maker's. A Lent is a value: copying it allocates nothing. The zero Lent
// is no communicator: its calls fail with ErrClosed, its ...Op are refused
// by Group.
type Lent struct {
	c      *Comm
	stream cudart.Stream
	g      Guard
	tok    uint64
}

// check is why the lease cannot be used: no communicator, or its lease has
// ended.
func (b Lent) check() error {
	if b.c == nil {
		return fmt.Errorf("%w: the zero Lent", ErrClosed)
	}
	return b.leaseErr()
}

// leaseErr is the Guard's error, once the lease has ended.
func (b Lent) leaseErr() error {
	if err := b.g.LeaseErr(b.tok); err != nil {
		return fmt.Errorf("nccl: %s, lent: %w", b.c, err)
	}
	return nil
}

// Stream is the stream the lease's operations are queued on: the slot's.
func (b Lent) Stream() (cudart.Stream, error) {
	if err := b.check(); err != nil {
		return 0, err
	}
	return b.stream, nil
}

// Rank is the communicator's rank, -1 for the zero Lent.
func (b Lent) Rank() int {
	if b.c == nil {
		return -1
	}
	return b.c.rank
}

// Size is the number of ranks of the communicator, 0 for the zero Lent.
func (b Lent) Size() int {
	if b.c == nil {
		return 0
	}
	return b.c.size
}

// Device is the device the communicator works on, -1 for the zero Lent.
func (b Lent) Device() int {
	if b.c == nil {
		return -1
	}
	return b.c.device
}

// op is the communicator's operation on the slot's stream, checked against
// the lease when Group posts it.
func (b Lent) op(call ncclabi.Call, send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, peer int) Op {
	if b.c == nil {
		return Op{}
	}
	o := b.c.op(call, send, recv, count, t, op, peer, b.stream)
	o.g, o.tok = b.g, b.tok
	return o
}

// run posts o, which Group checks against the lease.
func (b Lent) run(o Op) error {
	if b.c == nil {
		return fmt.Errorf("%w: the zero Lent", ErrClosed)
	}
	return b.c.l.Group(o)
}

// AllReduceOp is AllReduce, for Group.
func (b Lent) AllReduceOp(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp) Op {
	return b.op(ncclabi.AllReduce, send, recv, count, t, op, 0)
}

// AllReduce is Comm.AllReduce on the slot's stream.
func (b Lent) AllReduce(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp) error {
	return b.run(b.AllReduceOp(send, recv, count, t, op))
}

// AllGatherOp is AllGather, for Group.
func (b Lent) AllGatherOp(send, recv cudart.DevicePtr, sendCount uint64, t DataType) Op {
	return b.op(ncclabi.AllGather, send, recv, sendCount, t, 0, 0)
}

// AllGather is Comm.AllGather on the slot's stream.
func (b Lent) AllGather(send, recv cudart.DevicePtr, sendCount uint64, t DataType) error {
	return b.run(b.AllGatherOp(send, recv, sendCount, t))
}

// ReduceScatterOp is ReduceScatter, for Group.
func (b Lent) ReduceScatterOp(send, recv cudart.DevicePtr, recvCount uint64, t DataType, op RedOp) Op {
	return b.op(ncclabi.ReduceScatter, send, recv, recvCount, t, op, 0)
}

// ReduceScatter is Comm.ReduceScatter on the slot's stream.
func (b Lent) ReduceScatter(send, recv cudart.DevicePtr, recvCount uint64, t DataType, op RedOp) error {
	return b.run(b.ReduceScatterOp(send, recv, recvCount, t, op))
}

// BroadcastOp is Broadcast, for Group.
func (b Lent) BroadcastOp(send, recv cudart.DevicePtr, count uint64, t DataType, root int) Op {
	return b.op(ncclabi.Broadcast, send, recv, count, t, 0, root)
}

// Broadcast is Comm.Broadcast on the slot's stream.
func (b Lent) Broadcast(send, recv cudart.DevicePtr, count uint64, t DataType, root int) error {
	return b.run(b.BroadcastOp(send, recv, count, t, root))
}

// ReduceOp is Reduce, for Group.
func (b Lent) ReduceOp(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, root int) Op {
	return b.op(ncclabi.Reduce, send, recv, count, t, op, root)
}

// Reduce is Comm.Reduce on the slot's stream.
func (b Lent) Reduce(send, recv cudart.DevicePtr, count uint64, t DataType, op RedOp, root int) error {
	return b.run(b.ReduceOp(send, recv, count, t, op, root))
}

// SendOp is Send, for Group.
func (b Lent) SendOp(send cudart.DevicePtr, count uint64, t DataType, peer int) Op {
	return b.op(ncclabi.Send, send, 0, count, t, 0, peer)
}

// Send is Comm.Send on the slot's stream.
func (b Lent) Send(send cudart.DevicePtr, count uint64, t DataType, peer int) error {
	return b.run(b.SendOp(send, count, t, peer))
}

// RecvOp is Recv, for Group.
func (b Lent) RecvOp(recv cudart.DevicePtr, count uint64, t DataType, peer int) Op {
	return b.op(ncclabi.Recv, 0, recv, count, t, 0, peer)
}

// Recv is Comm.Recv on the slot's stream.
func (b Lent) Recv(recv cudart.DevicePtr, count uint64, t DataType, peer int) error {
	return b.run(b.RecvOp(recv, count, t, peer))
}
