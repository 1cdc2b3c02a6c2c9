package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// How a tensor-parallel request launches its work.
const (
	// One CUDA graph a device and slot, the all-reduce inside it.
	launchGraph = "graph"
	// Two graphs a device and slot, around an all-reduce called eagerly.
	launchSplit = "split"
	// Every copy, GEMM, kernel and all-reduce called one by one.
	launchEager = "eager"
)

// workspace is each slot's cuBLAS workspace in the pool.
const workspace = cublas.DefaultWorkspace

// refs are a slot's buffers and the shared parameters.
type refs struct {
	params              pool.Ref
	in, out, x, h, y, z pool.Ref
}

// backend serves requests of one batch size from pool.MultiSlots: as
// replicas (a slot of any device serves a request alone) or tensor parallel
// (a request runs on a slot of every device at once, its group).
type backend struct {
	name    string
	rows    int
	launch  string
	lib     *nccl.Library
	ms      *pool.MultiSlots
	shards  map[int]*shard // by device
	r       refs
	profile string
	nodes   []cudart.GraphNodeCounts // of every request graph
	timeout time.Duration            // bound of a request's wait for its devices

	// replicas: graphs by device, then slot (launchGraph), or none.
	graphs map[int]capture.PerSlot

	// tensor parallel: the slots, all held for the backend's life, in
	// groups of one a device (group k: slot k of every device), a group's
	// graphs, and the free groups.
	held       []pool.Slot
	groups     [][]member
	groupExecs [][][]cudart.GraphExec // [group][part][member]
	free       chan int
	pinned     bool // client c always runs group c: one process per GPU
	aborted    *abortSignal
	watch      *watchdog // bounds each group's request
}

// newBackend makes n slots of batch rows on each device of shards, the
// shard's parameters loaded on each. comms, when not nil, makes the
// backend tensor parallel: comms[k][i] is slot k's communicator on the
// i-th device of devices. A tensor-parallel request that fails on its
// communicators, or is not done within timeout, raises aborted.
func newBackend(name string, shards map[int]*shard, devices []int, n, rows int, blas *cublas.Library, lib *nccl.Library, comms [][]*nccl.Comm, launch string, pinnedClients bool, timeout time.Duration, aborted *abortSignal) (_ *backend, err error) {
	sh := shards[devices[0]]
	b := &backend{name: name, rows: rows, launch: launch, lib: lib, shards: shards, profile: fmt.Sprintf("batch%d", rows), timeout: timeout, pinned: pinnedClients, aborted: aborted}
	shared := pool.NewProfile("shared")
	if b.r.params, err = shared.Device(sh.bytes(), pool.Name("params")); err != nil {
		return nil, err
	}
	pr := pool.NewProfile(b.profile)
	for _, d := range []struct {
		ref  *pool.Ref
		host bool
		size uint64
		name string
	}{
		{&b.r.in, true, sh.inBytes(rows), "in"}, {&b.r.out, true, sh.outBytes(rows), "out"},
		{&b.r.x, false, sh.inBytes(rows), "x"}, {&b.r.h, false, sh.hBytes(rows), "h"},
		{&b.r.y, false, sh.yBytes(rows), "y"}, {&b.r.z, false, sh.outBytes(rows), "z"},
	} {
		declare := pr.Device
		if d.host {
			declare = pr.Host
		}
		if *d.ref, err = declare(d.size, pool.Name(d.name)); err != nil {
			return nil, err
		}
	}
	layout := pool.SlotLayout{Shared: shared, Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{blas.ForSlots(workspace)}}
	if b.ms, err = pool.NewMultiSlots(sh.rt, devices, n, layout, pool.WithHostPinning(pinned.MethodHostAlloc)); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	for _, d := range devices {
		pb, err := b.ms.On(d).Shared(b.r.params)
		if err != nil {
			return nil, err
		}
		p, err := pb.Ptr()
		if err != nil {
			return nil, err
		}
		if err := shards[d].load(p); err != nil {
			return nil, err
		}
	}
	if comms == nil {
		return b, b.captureReplicas(devices)
	}
	return b, b.holdGroups(devices, n, comms)
}

// bufsOf are sl's buffers, its stream and its lent cuBLAS handle.
func (b *backend) bufsOf(sl pool.Slot) (*bufs, error) {
	out := &bufs{rows: b.rows}
	var err error
	if out.stream, err = sl.Stream(); err != nil {
		return nil, err
	}
	var h cublas.Lent
	if h, err = pool.Attached[cublas.Lent](sl); err != nil {
		return nil, err
	}
	out.blas = h
	if out.in, err = sl.Bytes(b.r.in); err != nil {
		return nil, err
	}
	if out.out, err = sl.Bytes(b.r.out); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst *cudart.DevicePtr
		ref pool.Ref
	}{{&out.x, b.r.x}, {&out.h, b.r.h}, {&out.y, b.r.y}, {&out.z, b.r.z}, {&out.w, b.r.params}} {
		if *p.dst, err = sl.Ptr(p.ref); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// captureReplicas captures a request's graph on every slot of every
// device.
func (b *backend) captureReplicas(devices []int) error {
	if b.launch != launchGraph {
		return nil
	}
	b.graphs = map[int]capture.PerSlot{}
	for _, d := range devices {
		g, err := capture.EachSlot(b.shards[d].rt, d, b.ms.On(d), []string{b.profile}, func(sl pool.Slot, _ int) (cudart.GraphExec, error) {
			bf, err := b.bufsOf(sl)
			if err != nil {
				return 0, err
			}
			ms := []member{{b.shards[d], bf}}
			xs, counts, err := captureMembers(ms, func() error { return enqueue(b.lib, ms) }, b.finish)
			if err != nil {
				return 0, err
			}
			b.nodes = append(b.nodes, counts...)
			return xs[0], nil
		})
		if err != nil {
			return err
		}
		b.graphs[d] = g
	}
	return nil
}

// holdGroups takes every slot of every device for the backend's life and
// groups them, slot k of each device with communicator set k, then
// captures each group's graphs.
func (b *backend) holdGroups(devices []int, n int, comms [][]*nccl.Comm) error {
	b.groups = make([][]member, n)
	for i, d := range devices {
		var slots []pool.Slot
		for range n {
			sl, err := b.ms.On(d).Acquire(context.Background(), b.profile)
			if err != nil {
				return err
			}
			b.held = append(b.held, sl)
			slots = append(slots, sl)
		}
		slices.SortFunc(slots, func(a, c pool.Slot) int { return a.Index() - c.Index() })
		for k, sl := range slots {
			bf, err := b.bufsOf(sl)
			if err != nil {
				return err
			}
			bf.comm = comms[k][i]
			b.groups[k] = append(b.groups[k], member{b.shards[d], bf})
		}
	}
	b.free = make(chan int, n)
	for k := range n {
		b.free <- k
	}
	b.watch = newWatchdog(n, b.timeout, b.aborted, b.abortGroup)
	if b.launch == launchEager {
		return nil
	}
	b.groupExecs = make([][][]cudart.GraphExec, n)
	for k, ms := range b.groups {
		parts := []func() error{func() error { return enqueue(b.lib, ms) }}
		if b.launch == launchSplit {
			parts = []func() error{
				func() error { return eachMember(ms, func(m member) error { return m.s.before(m.b) }) },
				func() error { return eachMember(ms, func(m member) error { return m.s.after(m.b) }) },
			}
		}
		for _, part := range parts {
			xs, counts, err := captureMembers(ms, part, b.finish)
			if err != nil {
				return err
			}
			b.groupExecs[k] = append(b.groupExecs[k], xs)
			b.nodes = append(b.nodes, counts...)
		}
	}
	return nil
}

// exchange moves one request's data through the staging buffers of the
// member that serves it.
type exchange interface {
	Fill(staging []byte) error
	Read(out []byte) error
}

// serve runs one request from client: waited is its wait for a slot (a
// replica's) or a group (tensor parallel's).
func (b *backend) serve(ctx context.Context, client int, x exchange) (waited time.Duration, err error) {
	if b.groups != nil {
		return b.serveGroup(client, x)
	}
	start := time.Now()
	// Bounded: a slot whose stream never finishes is never handed on.
	actx, cancel := context.WithTimeout(ctx, b.timeout)
	sl, err := b.ms.Acquire(actx, b.profile)
	cancel()
	waited = time.Since(start)
	if err != nil {
		return waited, err
	}
	defer func() { err = errors.Join(err, b.ms.Release(sl)) }()
	bf, err := b.bufsOf(sl)
	if err != nil {
		return waited, err
	}
	ms := []member{{b.shards[sl.Device()], bf}}
	if err := x.Fill(bf.in); err != nil {
		return waited, err
	}
	if g := b.graphs[sl.Device()].Of(sl, 0); g != 0 {
		err = launch(ms, []cudart.GraphExec{g})
	} else {
		err = enqueue(b.lib, ms)
	}
	if err == nil {
		err = b.finish(ms)
	}
	if err != nil {
		return waited, err
	}
	return waited, x.Read(bf.out)
}

func (b *backend) serveGroup(client int, x exchange) (waited time.Duration, err error) {
	k := client
	if !b.pinned {
		start := time.Now()
		k, err = b.takeGroup()
		waited = time.Since(start)
		if err != nil {
			return waited, err
		}
		defer func() { b.free <- k }()
	}
	b.watch.begin(k)
	defer b.watch.end(k)
	ms := b.groups[k]
	for _, m := range ms {
		if err := x.Fill(m.b.in); err != nil {
			return waited, err
		}
	}
	switch b.launch {
	case launchGraph:
		err = launch(ms, b.groupExecs[k][0])
	case launchSplit:
		err = launch(ms, b.groupExecs[k][0])
		if err == nil {
			err = allReduceAll(b.lib, ms)
		}
		if err == nil {
			err = launch(ms, b.groupExecs[k][1])
		}
	default:
		err = enqueue(b.lib, ms)
	}
	if err == nil {
		b.watch.at(k, phaseWait)
		err = b.finish(ms)
	}
	if err != nil {
		b.aborted.raise(err)
		return waited, err
	}
	b.watch.at(k, phaseRead)
	return waited, x.Read(ms[0].b.out)
}

// takeGroup takes a free group, waiting b.timeout at most: a group's
// request that never ends never gives it back.
func (b *backend) takeGroup() (int, error) {
	select {
	case k := <-b.free:
		return k, nil
	default:
	}
	t := time.NewTimer(b.timeout)
	defer t.Stop()
	select {
	case k := <-b.free:
		return k, nil
	case <-t.C:
		return 0, fmt.Errorf("%w: no group of %d free after %v (their requests hung?)", nccl.ErrTimeout, len(b.groups), b.timeout)
	}
}

// abortGroup aborts group k's communicators, each in the background: an
// abort waits for the call in progress on its communicator.
func (b *backend) abortGroup(k int) {
	for _, m := range b.groups[k] {
		go func() { _ = m.b.comm.Abort() }()
	}
}

// finish waits for every member's stream. Tensor parallel polls (nccl's
// Wait: cudaStreamQuery and the communicators' errors) for b.timeout at
// most, on the fake as on CUDA, whose queries run the work they find
// queued: a peer that died leaves the all-reduce's kernel waiting on the
// GPU, which a stream synchronisation would wait on for ever. Past the
// bound Wait aborts the communicators (AbortWait at most) and fails, and
// the failure is raised to b.aborted, which bounds the cleanup after it.
// A replica has no peer to wait for: it synchronises its stream.
func (b *backend) finish(ms []member) error {
	if ms[0].b.comm == nil {
		for _, m := range ms {
			if err := m.s.rt.StreamSynchronize(m.s.dev, m.b.stream); err != nil {
				return err
			}
		}
		return nil
	}
	qs := make([]nccl.Queued, len(ms))
	for i, m := range ms {
		qs[i] = nccl.Queued{Comm: m.b.comm, Stream: m.b.stream}
	}
	err := b.lib.Wait(ms[0].s.rt, b.timeout, qs...)
	if err != nil {
		b.aborted.raise(err)
	}
	return err
}

// devicesOf is the backend's devices.
func (b *backend) devices() []int { return b.ms.Devices() }

func (b *backend) close() error {
	if b.watch != nil {
		b.watch.close()
		b.watch = nil
	}
	var errs []error
	for d, g := range b.graphs {
		errs = append(errs, g.Destroy(b.shards[d].rt, d))
	}
	for k, parts := range b.groupExecs {
		for _, xs := range parts {
			for i, x := range xs {
				m := b.groups[k][i]
				errs = append(errs, m.s.rt.GraphExecDestroy(m.s.dev, x))
			}
		}
	}
	b.graphs, b.groupExecs = nil, nil
	for _, sl := range b.held {
		errs = append(errs, b.ms.Release(sl))
	}
	b.held = nil
	if b.ms != nil {
		errs = append(errs, b.ms.Close())
	}
	return errors.Join(errs...)
}
