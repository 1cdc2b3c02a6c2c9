package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

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
	memory() string
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

// slotsBackend serves from pool.Slots: a slot per request, with its own
// stream, and with graphs one CUDA graph per slot and profile.
type slotsBackend struct {
	m       *model
	s       *pool.Slots
	weights pool.Ref
	byRows  map[int]int // batch rows to index in prof, so that a request formats no name
	prof    []slotRefs
	graphs  [][]cudart.GraphExec // [slot][profile]; nil launching kernel by kernel
}

func newSlotsBackend(m *model, n int, batches []int, graphs bool) (_ *slotsBackend, err error) {
	b := &slotsBackend{m: m, byRows: map[int]int{}}
	shared := pool.NewProfile("shared")
	if b.weights, err = shared.Device(m.weightBytes(), pool.Name("weights")); err != nil {
		return nil, err
	}
	staging, err := shared.Host(m.weightBytes(), pool.Name("weights.staging"))
	if err != nil {
		return nil, err
	}
	var profiles []*pool.Profile
	for _, rows := range batches {
		if _, ok := b.byRows[rows]; ok {
			continue
		}
		pr := pool.NewProfile(profileName(rows))
		size := m.rowBytes() * uint64(rows)
		r := slotRefs{rows: rows, name: pr.Name()}
		for _, d := range []struct {
			ref  *pool.Ref
			host bool
			name string
		}{{&r.in, true, "in"}, {&r.out, true, "out"}, {&r.x, false, "x"}, {&r.y, false, "y"}} {
			declare := pr.Device
			if d.host {
				declare = pr.Host
			}
			if *d.ref, err = declare(size, pool.Name(d.name)); err != nil {
				return nil, err
			}
		}
		b.byRows[rows] = len(b.prof)
		b.prof = append(b.prof, r)
		profiles = append(profiles, pr)
	}
	if b.s, err = pool.NewSlots(m.rt, n, pool.SlotLayout{Shared: shared, Profiles: profiles}, pool.WithHostPinning(pinned.MethodHostAlloc)); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	wb, err := b.s.Shared(b.weights)
	if err != nil {
		return nil, err
	}
	sb, err := b.s.Shared(staging)
	if err != nil {
		return nil, err
	}
	w, err := wb.Ptr()
	if err != nil {
		return nil, err
	}
	sbytes, err := sb.Bytes()
	if err != nil {
		return nil, err
	}
	if err := m.loadWeights(w, sbytes); err != nil {
		return nil, err
	}
	if graphs {
		return b, b.captureAll(n)
	}
	return b, nil
}

// captureAll captures every profile's graph on every slot: holding all n
// slots at once makes Acquire hand out each of them.
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
			if bufs, st, err = b.buffers(sl, r); err != nil {
				break
			}
			if b.graphs[sl.Index()][pi], err = b.m.capture(st, bufs, r.rows); err != nil {
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
func (b *slotsBackend) buffers(sl pool.Slot, r slotRefs) (buffers, cudart.Stream, error) {
	var out buffers
	var err error
	st, err := sl.Stream()
	if err != nil {
		return out, 0, err
	}
	if out.in, err = sl.Bytes(r.in); err != nil {
		return out, 0, err
	}
	if out.out, err = sl.Bytes(r.out); err != nil {
		return out, 0, err
	}
	if out.x, err = sl.Ptr(r.x); err != nil {
		return out, 0, err
	}
	if out.y, err = sl.Ptr(r.y); err != nil {
		return out, 0, err
	}
	out.w, err = sl.Ptr(b.weights)
	return out, st, err
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
	bufs, st, err := b.buffers(sl, b.prof[pi])
	if err != nil {
		return waited, err
	}
	var g cudart.GraphExec
	if b.graphs != nil {
		g = b.graphs[sl.Index()][pi]
	}
	return waited, b.m.run(st, bufs, rows, g, x)
}

func (b *slotsBackend) memory() string {
	st := b.s.Stats()
	return fmt.Sprintf("device %s = %s shared + %d × %s; host %s = %s + %d × %s",
		humanize.IBytes(st.Device), humanize.IBytes(st.SharedDevice), st.Slots, humanize.IBytes(st.SlotDevice),
		humanize.IBytes(st.Host), humanize.IBytes(st.SharedHost), st.Slots, humanize.IBytes(st.SlotHost))
}

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

// mutexBackend is today's way: one pool, one set of buffers and one stream,
// one request at a time behind a mutex, with graphs one per profile.
type mutexBackend struct {
	m      *model
	p      *pool.Pool
	st     cudart.Stream
	bufs   buffers
	graphs map[int]cudart.GraphExec // by rows; nil launching kernel by kernel
	mu     sync.Mutex
}

func newMutexBackend(m *model, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	if b.st, err = m.rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	size := m.rowBytes() * uint64(slices.Max(batches))
	const slack = 4 << 10 // rounding of each buffer to 256 B
	if b.p, err = pool.New(m.rt, pool.WithDeviceBytes(2*size+m.weightBytes()+slack), pool.WithHostBytes(2*size+m.weightBytes()+slack),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(b.st)); err != nil {
		return nil, errors.Join(err, m.rt.StreamDestroy(dev, b.st))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	var in, out, staging, x, y, w *pool.Buffer
	for _, r := range []struct {
		buf  **pool.Buffer
		want func(uint64, ...pool.WantOption) (*pool.Buffer, error)
		size uint64
		name string
	}{
		{&in, b.p.WantHost, size, "in"}, {&out, b.p.WantHost, size, "out"}, {&staging, b.p.WantHost, m.weightBytes(), "weights.staging"},
		{&x, b.p.WantDevice, size, "x"}, {&y, b.p.WantDevice, size, "y"}, {&w, b.p.WantDevice, m.weightBytes(), "weights"},
	} {
		if *r.buf, err = r.want(r.size, pool.Name(r.name)); err != nil {
			return nil, err
		}
	}
	if err := b.p.Commit(); err != nil {
		return nil, err
	}
	var sbytes []byte
	for _, e := range []error{
		ptrTo(&b.bufs.x, x), ptrTo(&b.bufs.y, y), ptrTo(&b.bufs.w, w),
		bytesOf(&b.bufs.in, in), bytesOf(&b.bufs.out, out), bytesOf(&sbytes, staging),
	} {
		if e != nil {
			return nil, e
		}
	}
	if err := m.loadWeights(b.bufs.w, sbytes); err != nil {
		return nil, err
	}
	if graphs {
		b.graphs, err = m.captureEach(b.st, b.bufs, batches)
	}
	return b, err
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
	return waited, b.m.run(b.st, b.bufs, rows, g, x)
}

func (b *mutexBackend) memory() string {
	st := b.p.Stats()
	return fmt.Sprintf("device %s, host %s", humanize.IBytes(st.Device.Used), humanize.IBytes(st.Host.Used))
}

func (b *mutexBackend) close() error {
	errs := []error{b.m.destroyGraphs(b.graphs)}
	b.graphs = nil
	if b.p != nil {
		errs = append(errs, b.p.Close())
		b.p = nil
	}
	errs = append(errs, b.m.rt.StreamDestroy(dev, b.st))
	return errors.Join(errs...)
}

// asyncBackend is stream-ordered allocation: a stream and pinned staging
// per client, the activations taken with cudaMallocAsync and given back
// with cudaFreeAsync in every request. The default memory pool keeps what
// it frees (release threshold at its maximum, put back at close), as a
// tuned server sets it. Addresses change from one request to the next, so
// a graph cannot be kept over fixed buffers; with graphs, the allocation
// and the free are captured into each client's graph as memory nodes.
type asyncBackend struct {
	*perClientBackend // with async buffers
	threshold         uint64
}

func newAsyncBackend(m *model, clients int, batches []int, graphs bool) (_ *asyncBackend, err error) {
	b := &asyncBackend{}
	if b.threshold, err = m.rt.MemPoolReleaseThreshold(dev); err != nil {
		return nil, err
	}
	if err := m.rt.SetMemPoolReleaseThreshold(dev, math.MaxUint64); err != nil {
		return nil, err
	}
	if b.perClientBackend, err = newClients(m, clients, batches, true, graphs); err != nil {
		return nil, errors.Join(err, m.rt.SetMemPoolReleaseThreshold(dev, b.threshold))
	}
	return b, nil
}

func (b *asyncBackend) memory() string {
	return fmt.Sprintf("device: what cudaMallocAsync's pool or the graphs' memory nodes keep; host %s pinned per client", humanize.IBytes(2*uint64(len(b.clients[0].bufs.in))))
}

func (b *asyncBackend) close() error {
	return errors.Join(b.perClientBackend.close(), b.m.rt.SetMemPoolReleaseThreshold(dev, b.threshold))
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
