package fakenccl

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// run is a matched operation as its pieces run it. Pieces run one at a
// time under the fake's lock (cudarttest.Library), so rounds, computed and
// failed need no lock; refused is set by the matching call, outside it.
type run struct {
	parts  []*part
	pieces []*piece // by rank, each the Work.Key of its rank's piece
	// rounds counts each piece's runs: once queued eagerly, once per
	// launch of a graph that captured it. Round k of the operation is
	// computed when every piece has run k times.
	rounds   []int
	computed int
	failed   error
	refused  atomic.Pointer[string] // why a piece could not be queued
}

func newRun(o *op) *run {
	r := &run{parts: o.parts, rounds: make([]int, len(o.parts))}
	for i, p := range o.parts {
		r.pieces = append(r.pieces, &piece{run: r, i: i, stream: cudart.Stream(p.f.Stream)})
	}
	return r
}

func (r *run) refuse(why string) { r.refused.CompareAndSwap(nil, &why) }

// piece is rank i's part of a run, on its stream.
type piece struct {
	run    *run
	i      int
	stream cudart.Stream
	ran    atomic.Bool // it ran once, for finalize
}

// work is the piece as the hook queues it: an NCCL kernel, ordered
// through its communicator's own stream (NCCL's strong stream, with graph
// mixing): captured, it records an event-wait node before the
// communicator's first kernel of the capture and an event-record node
// after each, the nodes CUDA records.
func (pc *piece) work() cudarttest.Work {
	p := pc.run.parts[pc.i]
	return cudarttest.Work{Device: p.comm.device, Stream: pc.stream, Call: p.f.Call.String(), Serial: p.comm.raw, Run: pc.do, Key: pc, Ready: pc.ready}
}

// ready reports whether the piece can run: whether every other rank's
// piece of its round is queued, behind work that can run, as a GPU's
// kernel of the collective ends once every peer's has started. A piece
// that will fail whatever its peers do (refused, its communicator
// aborted, the operation failed) can run, to fail.
func (pc *piece) ready(p *cudarttest.Progress) bool {
	r := pc.run
	if r.refused.Load() != nil || r.parts[pc.i].comm.dropped.Load() || r.failed != nil {
		return true
	}
	round := r.rounds[pc.i] + 1 + p.Earlier()
	for j, q := range r.parts {
		need := round - r.rounds[j]
		if j != pc.i && need > 0 && !p.Reaches(q.comm.device, cudart.Stream(q.f.Stream), r.pieces[j], need) {
			return false
		}
	}
	return true
}

// do runs the piece: it marks its rank reached for its round, runs the
// other ranks' streams up to their pieces of the round, and the
// piece that finds every rank reached computes the operation. A piece that
// cannot run (a rank's part not queued, its communicator aborted before its
// stream reached it, a stream that failed) fails, faulting its device.
func (pc *piece) do(a *cudarttest.Access) error {
	r := pc.run
	pc.ran.Store(true)
	p := r.parts[pc.i]
	if why := r.refused.Load(); why != nil {
		return errors.New(*why)
	}
	if p.comm.dropped.Load() {
		return fmt.Errorf("%s: rank %d's communicator was aborted before its part ran", p.f.Call, p.comm.rank)
	}
	r.rounds[pc.i]++
	round := r.rounds[pc.i]
	for j, q := range r.parts {
		if r.failed != nil || r.rounds[j] >= round {
			continue
		}
		if err := a.Wait(q.comm.device, cudart.Stream(q.f.Stream), r.pieces[j]); err != nil && r.rounds[j] < round {
			r.failed = fmt.Errorf("%s: rank %d's stream 0x%x on device %d failed before its part: %w", q.f.Call, q.comm.rank, q.f.Stream, q.comm.device, err)
		}
		if r.rounds[j] < round && r.failed == nil {
			r.failed = fmt.Errorf("%s: rank %d's part did not run when its stream 0x%x on device %d was synchronised (a captured collective runs when every rank's graph is launched on the stream it captured, as often)",
				q.f.Call, q.comm.rank, q.f.Stream, q.comm.device)
		}
	}
	if r.failed != nil {
		return r.failed
	}
	if r.computed < round {
		r.computed = round
		r.failed = compute(a, r.parts)
	}
	return r.failed
}

// compute computes the operation of parts on the CPU: every read first,
// then every write, so that buffers used in place read their values from
// before.
func compute(a *cudarttest.Access, parts []*part) error {
	p0 := parts[0].f
	t, n := p0.Type, p0.Count
	bytes := n * t.Size()
	nr := uint64(len(parts))
	read := func(p *part, ptr uintptr, size uint64, what string) ([]byte, error) {
		b := make([]byte, size)
		if size == 0 {
			return b, nil
		}
		if err := a.On(p.comm.device).Read(cudart.DevicePtr(ptr), b); err != nil {
			return nil, fmt.Errorf("%s on rank %d (device %d) reads its %s: %w", p.f.Call, p.comm.rank, p.comm.device, what, err)
		}
		return b, nil
	}
	write := func(p *part, ptr uintptr, b []byte) error {
		if len(b) == 0 {
			return nil
		}
		if err := a.On(p.comm.device).Write(cudart.DevicePtr(ptr), b); err != nil {
			return fmt.Errorf("%s on rank %d (device %d) writes its recvbuff: %w", p.f.Call, p.comm.rank, p.comm.device, err)
		}
		return nil
	}
	if p0.Call == ncclabi.Send || p0.Call == ncclabi.Recv {
		b, err := read(parts[0], parts[0].f.Send, bytes, "sendbuff")
		if err != nil {
			return err
		}
		return write(parts[1], parts[1].f.Recv, b)
	}
	sendBytes := bytes
	switch p0.Call {
	case ncclabi.ReduceScatter:
		sendBytes = bytes * nr
	case ncclabi.Broadcast:
		sendBytes = 0
	}
	ins := make([][]byte, nr)
	for r, p := range parts {
		size := sendBytes
		if p0.Call == ncclabi.Broadcast && r == int(p0.Peer) {
			size = bytes
		}
		var err error
		if ins[r], err = read(p, p.f.Send, size, "sendbuff"); err != nil {
			return err
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
	for r, p := range parts {
		if err := write(p, p.f.Recv, outs[r]); err != nil {
			return err
		}
	}
	return nil
}
