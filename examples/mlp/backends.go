package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// backend runs one request of rows batch rows: x fills the staging buffer
// it is handed with the input and reads the output from its buffer. client
// is the load generator's client, for the backends that keep state per
// client. waited is how long the request waited for what the backend
// shares between requests (a slot, the mutex); zero where it shares
// nothing.
type backend interface {
	serve(ctx context.Context, client, rows int, x exchange) (waited time.Duration, err error)
	// pooled is the device bytes the backend's pool took: the arena.
	pooled() uint64
	// nodes are the node counts of its request graphs, by batch rows.
	nodes() map[int]cudart.GraphNodeCounts
	close() error
}

// profileName is the profile of a batch of rows.
func profileName(rows int) string { return fmt.Sprintf("batch%d", rows) }

// slotRefs are one profile's name and buffers.
type slotRefs struct {
	rows          int
	name          string
	in, out, x, y pool.Ref
}

// graphNodes are the node counts of a backend's request graphs: by batch
// size, those of the graph with the most memory nodes.
type graphNodes struct {
	counts map[int]cudart.GraphNodeCounts
}

// note counts in the graph of rows rows that has counts c.
func (g *graphNodes) note(rows int, c cudart.GraphNodeCounts) {
	if g.counts == nil {
		g.counts = map[int]cudart.GraphNodeCounts{}
	}
	if old, ok := g.counts[rows]; !ok || c.Memory() > old.Memory() {
		g.counts[rows] = c
	}
}

func (g *graphNodes) nodes() map[int]cudart.GraphNodeCounts { return g.counts }

// slotsBackend serves from pool.Slots: a slot per request, with its own
// stream, cuBLAS handle and workspace, and with graphs one CUDA graph per
// slot and profile.
type slotsBackend struct {
	graphNodes
	m      *model
	s      *pool.Slots
	params pool.Ref
	byRows map[int]int // batch rows to index in prof
	prof   []slotRefs
	graphs [][]cudart.GraphExec // [slot][profile]; nil launching call by call
}

func newSlotsBackend(m *model, lib *cublas.Library, n int, batches []int, graphs bool) (_ *slotsBackend, err error) {
	b := &slotsBackend{m: m, byRows: map[int]int{}}
	shared := pool.NewProfile("shared")
	if b.params, err = shared.Device(m.paramBytes(), pool.Name("params")); err != nil {
		return nil, err
	}
	var profiles []*pool.Profile
	for _, rows := range batches {
		pr := pool.NewProfile(profileName(rows))
		r := slotRefs{rows: rows, name: pr.Name()}
		for _, d := range []struct {
			ref  *pool.Ref
			host bool
			size uint64
			name string
		}{
			{&r.in, true, uint64(4 * m.dims[0] * rows), "in"}, {&r.out, true, uint64(4 * m.dims[layers] * rows), "out"},
			{&r.x, false, m.actBytes(rows), "x"}, {&r.y, false, m.actBytes(rows), "y"},
		} {
			declare := pr.Device
			if d.host {
				declare = pr.Host
			}
			if *d.ref, err = declare(d.size, pool.Name(d.name)); err != nil {
				return nil, err
			}
		}
		b.byRows[rows] = len(b.prof)
		b.prof = append(b.prof, r)
		profiles = append(profiles, pr)
	}
	layout := pool.SlotLayout{Shared: shared, Profiles: profiles, BLAS: lib, BLASWorkspace: workspace}
	if b.s, err = pool.NewSlots(m.rt, n, layout, pool.WithHostPinning(pinned.MethodHostAlloc)); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	pb, err := b.s.Shared(b.params)
	if err != nil {
		return nil, err
	}
	p, err := pb.Ptr()
	if err != nil {
		return nil, err
	}
	if err := m.loadParams(p); err != nil {
		return nil, err
	}
	if graphs {
		return b, b.captureAll(n)
	}
	return b, nil
}

// captureAll captures every profile's graph on every slot: holding all n
// slots at once makes Acquire hand out each of them. A graph with a memory
// node is an error: the slot's handle works in the slot's workspace.
func (b *slotsBackend) captureAll(n int) error {
	b.graphs = make([][]cudart.GraphExec, n)
	for i := range b.graphs {
		b.graphs[i] = make([]cudart.GraphExec, len(b.prof))
	}
	for pi, r := range b.prof {
		held := make([]pool.Slot, 0, n)
		var err error
		for range n {
			var sl pool.Slot
			if sl, err = b.s.Acquire(context.Background(), r.name); err != nil {
				break
			}
			held = append(held, sl)
			var bufs buffers
			var st cudart.Stream
			var h cublas.Lent
			if bufs, st, h, err = b.buffers(sl, r); err != nil {
				break
			}
			var counts cudart.GraphNodeCounts
			if b.graphs[sl.Index()][pi], counts, err = b.m.capture(st, h, bufs, r.rows); err != nil {
				break
			}
			b.note(r.rows, counts)
			if counts.Memory() != 0 {
				err = fmt.Errorf("the graph of slot %d, %s, has %d memory nodes (%v), want 0", sl.Index(), r.name, counts.Memory(), counts)
				break
			}
		}
		for _, sl := range held {
			err = errors.Join(err, b.s.Release(sl))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// buffers are where a request runs in sl.
func (b *slotsBackend) buffers(sl pool.Slot, r slotRefs) (out buffers, st cudart.Stream, h cublas.Lent, err error) {
	if st, err = sl.Stream(); err != nil {
		return
	}
	if h, err = sl.BLAS(); err != nil {
		return
	}
	if out.in, err = sl.Bytes(r.in); err != nil {
		return
	}
	if out.out, err = sl.Bytes(r.out); err != nil {
		return
	}
	if out.x, err = sl.Ptr(r.x); err != nil {
		return
	}
	if out.y, err = sl.Ptr(r.y); err != nil {
		return
	}
	out.w, err = sl.Ptr(b.params)
	return
}

func (b *slotsBackend) serve(ctx context.Context, _, rows int, x exchange) (waited time.Duration, err error) {
	pi, ok := b.byRows[rows]
	if !ok {
		return 0, fmt.Errorf("%w: no profile for %d rows", pool.ErrUnknownProfile, rows)
	}
	start := time.Now()
	sl, err := b.s.Acquire(ctx, b.prof[pi].name)
	waited = time.Since(start)
	if err != nil {
		return waited, err
	}
	defer func() { err = errors.Join(err, b.s.Release(sl)) }()
	bufs, st, h, err := b.buffers(sl, b.prof[pi])
	if err != nil {
		return waited, err
	}
	var g cudart.GraphExec
	if b.graphs != nil {
		g = b.graphs[sl.Index()][pi]
	}
	return waited, b.m.run(st, h, bufs, rows, g, x)
}

func (b *slotsBackend) pooled() uint64 { return b.s.Stats().Pool.Device.Mapped }

func (b *slotsBackend) close() error {
	var errs []error
	for _, row := range b.graphs {
		for _, g := range row {
			if g != 0 {
				errs = append(errs, b.m.rt.GraphExecDestroy(dev, g))
			}
		}
	}
	b.graphs = nil
	return errors.Join(append(errs, b.s.Close())...)
}

// workspace is each cuBLAS handle's workspace in the pool: what cuBLAS
// takes for itself on Hopper.
const workspace = pool.DefaultBLASWorkspace

// mutexBackend is one pool, one set of buffers, one stream and one handle
// with its workspace in the pool, one request at a time behind a mutex,
// with graphs one per profile.
type mutexBackend struct {
	graphNodes
	m      *model
	p      *pool.Pool
	st     cudart.Stream
	h      *cublas.Handle
	bufs   buffers
	graphs map[int]cudart.GraphExec // by rows; nil launching call by call
	mu     sync.Mutex
}

func newMutexBackend(m *model, lib *cublas.Library, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	if b.st, err = m.rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	most := slices.Max(batches)
	in, out, act := uint64(4*m.dims[0]*most), uint64(4*m.dims[layers]*most), m.actBytes(most)
	const slack = 4 << 10 // rounding of each buffer to 256 B
	if b.p, err = pool.New(m.rt, pool.WithDeviceBytes(2*act+m.paramBytes()+workspace+slack), pool.WithHostBytes(in+out+slack),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(b.st)); err != nil {
		return nil, errors.Join(err, m.rt.StreamDestroy(dev, b.st))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	var bin, bout, x, y, w, ws *pool.Buffer
	for _, r := range []struct {
		buf  **pool.Buffer
		want func(uint64, ...pool.WantOption) (*pool.Buffer, error)
		size uint64
		name string
	}{
		{&bin, b.p.WantHost, in, "in"}, {&bout, b.p.WantHost, out, "out"},
		{&x, b.p.WantDevice, act, "x"}, {&y, b.p.WantDevice, act, "y"}, {&w, b.p.WantDevice, m.paramBytes(), "params"},
		{&ws, b.p.WantDevice, workspace, "cublas workspace"},
	} {
		if *r.buf, err = r.want(r.size, pool.Name(r.name)); err != nil {
			return nil, err
		}
	}
	if err := b.p.Commit(); err != nil {
		return nil, err
	}
	for _, e := range []error{
		ptrTo(&b.bufs.x, x), ptrTo(&b.bufs.y, y), ptrTo(&b.bufs.w, w),
		bytesOf(&b.bufs.in, bin), bytesOf(&b.bufs.out, bout),
	} {
		if e != nil {
			return nil, e
		}
	}
	if err := m.loadParams(b.bufs.w); err != nil {
		return nil, err
	}
	if b.h, err = lib.NewHandle(dev, b.st); err != nil {
		return nil, err
	}
	if err := b.h.SetWorkspace(ws); err != nil {
		return nil, err
	}
	if graphs {
		b.graphs = map[int]cudart.GraphExec{}
		for _, rows := range batches {
			g, counts, err := m.capture(b.st, b.h, b.bufs, rows)
			if err != nil {
				return nil, err
			}
			b.graphs[rows] = g
			b.note(rows, counts)
		}
	}
	return b, nil
}

func (b *mutexBackend) serve(_ context.Context, _, rows int, x exchange) (time.Duration, error) {
	g, err := graphFor(b.graphs, rows)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	b.mu.Lock()
	waited := time.Since(start)
	defer b.mu.Unlock()
	return waited, b.m.run(b.st, b.h, b.bufs, rows, g, x)
}

func (b *mutexBackend) pooled() uint64 { return b.p.Stats().Device.Mapped }

// close gives back what newMutexBackend made, the handle before the pool
// that holds its workspace.
func (b *mutexBackend) close() error {
	errs := []error{destroyGraphs(b.m.rt, b.graphs), b.h.Close()}
	b.graphs = nil
	if b.p != nil {
		errs = append(errs, b.p.Close())
		b.p = nil
	}
	errs = append(errs, b.m.rt.StreamDestroy(dev, b.st))
	return errors.Join(errs...)
}

// asyncBackend is stream-ordered allocation with no pool: a stream, a
// cuBLAS handle with no workspace set and pinned staging per client, the
// parameters taken once with cudaMalloc, the activations taken with
// cudaMallocAsync and given back with cudaFreeAsync in every request, and
// cuBLAS's workspace taken by cuBLAS itself from the same default memory
// pool. The pool keeps what it frees (release threshold at its maximum,
// put back at close), as a tuned server sets it. With graphs, each
// client's graph records the allocations as memory nodes.
type asyncBackend struct {
	graphNodes
	m         *model
	w         cudart.DevicePtr
	clients   []asyncClient
	threshold uint64
}

// asyncClient is one client's stream, handle, staging and graphs.
type asyncClient struct {
	st     cudart.Stream
	h      *cublas.Handle
	bufs   buffers
	graphs map[int]cudart.GraphExec // by rows; nil launching call by call
}

func newAsyncBackend(m *model, lib *cublas.Library, clients int, batches []int, graphs bool) (_ *asyncBackend, err error) {
	b := &asyncBackend{m: m}
	if b.threshold, err = m.rt.MemPoolReleaseThreshold(dev); err != nil {
		return nil, err
	}
	if err := m.rt.SetMemPoolReleaseThreshold(dev, math.MaxUint64); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	if b.w, err = m.rt.Malloc(dev, m.paramBytes()); err != nil {
		return nil, err
	}
	if err := m.loadParams(b.w); err != nil {
		return nil, err
	}
	most := slices.Max(batches)
	b.clients = make([]asyncClient, 0, clients)
	for range clients {
		// Kept from the start, for close to free what was taken.
		b.clients = append(b.clients, asyncClient{bufs: buffers{w: b.w, async: true}})
		c := &b.clients[len(b.clients)-1]
		if c.st, err = m.rt.StreamCreate(dev); err != nil {
			return nil, err
		}
		if c.h, err = lib.NewHandle(dev, c.st); err != nil {
			return nil, err
		}
		if c.bufs.in, err = m.rt.MallocHost(dev, uint64(4*m.dims[0]*most)); err != nil {
			return nil, err
		}
		if c.bufs.out, err = m.rt.MallocHost(dev, uint64(4*m.dims[layers]*most)); err != nil {
			return nil, err
		}
		if !graphs {
			continue
		}
		c.graphs = map[int]cudart.GraphExec{}
		for _, rows := range batches {
			g, counts, err := m.capture(c.st, c.h, c.bufs, rows)
			if err != nil {
				return nil, err
			}
			c.graphs[rows] = g
			b.note(rows, counts)
		}
	}
	return b, nil
}

func (b *asyncBackend) serve(_ context.Context, client, rows int, x exchange) (time.Duration, error) {
	c := &b.clients[client]
	g, err := graphFor(c.graphs, rows)
	if err != nil {
		return 0, err
	}
	return 0, b.m.run(c.st, c.h, c.bufs, rows, g, x)
}

func (b *asyncBackend) pooled() uint64 { return 0 }

func (b *asyncBackend) close() error {
	var errs []error
	for _, c := range b.clients {
		errs = append(errs, destroyGraphs(b.m.rt, c.graphs))
		if c.st != 0 {
			errs = append(errs, b.m.rt.StreamSynchronize(dev, c.st))
		}
		errs = append(errs, c.h.Close())
		if c.st != 0 {
			errs = append(errs, b.m.rt.StreamDestroy(dev, c.st))
		}
		for _, h := range [][]byte{c.bufs.in, c.bufs.out} {
			if h != nil {
				errs = append(errs, b.m.rt.FreeHost(h))
			}
		}
	}
	if b.w != 0 {
		errs = append(errs, b.m.rt.Free(dev, b.w))
	}
	b.clients, b.w = nil, 0
	// The pool gives back what it kept past its threshold at the next
	// synchronisation: here, not in the next configuration's setup, whose
	// device memory would seem to shrink by it.
	errs = append(errs, b.m.rt.SetMemPoolReleaseThreshold(dev, b.threshold))
	return errors.Join(append(errs, b.m.rt.DeviceSynchronize(dev))...)
}

// graphFor is the graph of graphs for rows, or 0 launching call by call
// (graphs nil).
func graphFor(graphs map[int]cudart.GraphExec, rows int) (cudart.GraphExec, error) {
	g, ok := graphs[rows]
	if graphs != nil && !ok {
		return 0, fmt.Errorf("%w: no graph for %d rows", pool.ErrUnknownProfile, rows)
	}
	return g, nil
}

// destroyGraphs destroys every graph of graphs.
func destroyGraphs(rt cudart.Full, graphs map[int]cudart.GraphExec) error {
	var errs []error
	for _, g := range graphs {
		errs = append(errs, rt.GraphExecDestroy(dev, g))
	}
	return errors.Join(errs...)
}

// ptrTo stores b's device address in p.
func ptrTo(p *cudart.DevicePtr, b *pool.Buffer) (err error) {
	*p, err = b.Ptr()
	return err
}

// bytesOf stores b's host view in v.
func bytesOf(v *[]byte, b *pool.Buffer) (err error) {
	*v, err = b.Bytes()
	return err
}
