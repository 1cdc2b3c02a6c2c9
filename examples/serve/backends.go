package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// backend runs one request of rows batch rows: fill writes the input into
// the staging buffer it is handed, read takes the output from its buffer.
// client is the load generator's client, for the backend that keeps a
// stream per client.
type backend interface {
	serve(ctx context.Context, client, rows int, fill, read func([]byte) error) error
	memory() string
	close() error
}

// profileName is the profile of a batch of rows.
func profileName(rows int) string { return fmt.Sprintf("batch%d", rows) }

// slotRefs are one profile's buffers.
type slotRefs struct {
	rows          int
	in, out, x, y pool.Ref
}

// slotsBackend serves from pool.Slots: a slot per request, with its own
// stream, and one CUDA graph per slot and profile.
type slotsBackend struct {
	m       *model
	s       *pool.Slots
	weights pool.Ref
	refs    map[string]int // profile name to index in profiles
	prof    []slotRefs
	graphs  [][]cudart.GraphExec // [slot][profile]; nil without graphs
}

func newSlotsBackend(m *model, n int, batches []int, graphs bool) (_ *slotsBackend, err error) {
	b := &slotsBackend{m: m, refs: map[string]int{}}
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
		pr := pool.NewProfile(profileName(rows))
		size := m.rowBytes() * uint64(rows)
		r := slotRefs{rows: rows}
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
		b.refs[pr.Name()] = len(b.prof)
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
			if sl, err = b.s.Acquire(context.Background(), profileName(r.rows)); err != nil {
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

func (b *slotsBackend) serve(ctx context.Context, _, rows int, fill, read func([]byte) error) (err error) {
	name := profileName(rows)
	pi, ok := b.refs[name]
	if !ok {
		return fmt.Errorf("%w: no profile for %d rows", pool.ErrUnknownProfile, rows)
	}
	sl, err := b.s.Acquire(ctx, name)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.s.Release(sl)) }()
	bufs, st, err := b.buffers(sl, b.prof[pi])
	if err != nil {
		return err
	}
	if err := fill(bufs.in); err != nil {
		return err
	}
	if b.graphs != nil {
		err = b.m.rt.GraphLaunch(dev, b.graphs[sl.Index()][pi], st)
	} else {
		err = b.m.enqueue(st, bufs, rows)
	}
	if err != nil {
		return err
	}
	if err := b.m.rt.StreamSynchronize(dev, st); err != nil {
		return err
	}
	return read(bufs.out)
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
// one request at a time behind a mutex, one graph per profile.
type mutexBackend struct {
	m      *model
	p      *pool.Pool
	st     cudart.Stream
	bufs   buffers
	graphs map[int]cudart.GraphExec // by rows; nil without graphs
	mu     sync.Mutex
}

func newMutexBackend(m *model, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	if b.st, err = m.rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	size := m.rowBytes() * uint64(maxInts(batches))
	if b.p, err = pool.New(m.rt, pool.WithDeviceBytes(2*size+m.weightBytes()+4<<10), pool.WithHostBytes(2*size+m.weightBytes()+4<<10),
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
		b.graphs = map[int]cudart.GraphExec{}
		for _, rows := range batches {
			if b.graphs[rows], err = m.capture(b.st, b.bufs, rows); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *mutexBackend) serve(_ context.Context, _, rows int, fill, read func([]byte) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := fill(b.bufs.in); err != nil {
		return err
	}
	var err error
	if b.graphs != nil {
		err = b.m.rt.GraphLaunch(dev, b.graphs[rows], b.st)
	} else {
		err = b.m.enqueue(b.st, b.bufs, rows)
	}
	if err != nil {
		return err
	}
	if err := b.m.rt.StreamSynchronize(dev, b.st); err != nil {
		return err
	}
	return read(b.bufs.out)
}

func (b *mutexBackend) memory() string {
	st := b.p.Stats()
	return fmt.Sprintf("device %s, host %s", humanize.IBytes(st.Device.Used), humanize.IBytes(st.Host.Used))
}

func (b *mutexBackend) close() error {
	var errs []error
	for _, g := range b.graphs {
		errs = append(errs, b.m.rt.GraphExecDestroy(dev, g))
	}
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
// tuned server sets it; addresses change from one request to the next, so
// no graph can be kept.
type asyncBackend struct {
	m         *model
	w         cudart.DevicePtr
	streams   []cudart.Stream
	in, out   [][]byte
	threshold uint64
}

func newAsyncBackend(m *model, clients int, batches []int) (_ *asyncBackend, err error) {
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
	if b.w, err = m.rt.Malloc(dev, m.weightBytes()); err != nil {
		return nil, err
	}
	staging, err := m.rt.MallocHost(dev, m.weightBytes())
	if err != nil {
		return nil, err
	}
	err = m.loadWeights(b.w, staging)
	if err = errors.Join(err, m.rt.FreeHost(staging)); err != nil {
		return nil, err
	}
	size := m.rowBytes() * uint64(maxInts(batches))
	for range clients {
		st, err := m.rt.StreamCreate(dev)
		if err != nil {
			return nil, err
		}
		b.streams = append(b.streams, st)
		for _, dst := range []*[][]byte{&b.in, &b.out} {
			h, err := m.rt.MallocHost(dev, size)
			if err != nil {
				return nil, err
			}
			*dst = append(*dst, h)
		}
	}
	return b, nil
}

func (b *asyncBackend) serve(_ context.Context, client, rows int, fill, read func([]byte) error) (err error) {
	st := b.streams[client]
	size := b.m.rowBytes() * uint64(rows)
	x, err := b.m.rt.MallocAsync(dev, size, st)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.m.rt.FreeAsync(dev, x, st)) }()
	y, err := b.m.rt.MallocAsync(dev, size, st)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.m.rt.FreeAsync(dev, y, st)) }()
	bufs := buffers{in: b.in[client], out: b.out[client], x: x, y: y, w: b.w}
	if err := fill(bufs.in); err != nil {
		return err
	}
	if err := b.m.enqueue(st, bufs, rows); err != nil {
		return err
	}
	if err := b.m.rt.StreamSynchronize(dev, st); err != nil {
		return err
	}
	return read(bufs.out)
}

func (b *asyncBackend) memory() string {
	return fmt.Sprintf("device: what cudaMallocAsync's pool keeps; host %s pinned per client", humanize.IBytes(2*uint64(len(b.in[0]))))
}

func (b *asyncBackend) close() error {
	var errs []error
	for _, st := range b.streams {
		errs = append(errs, b.m.rt.StreamSynchronize(dev, st), b.m.rt.StreamDestroy(dev, st))
	}
	for _, h := range append(b.in, b.out...) {
		errs = append(errs, b.m.rt.FreeHost(h))
	}
	if b.w != 0 {
		errs = append(errs, b.m.rt.Free(dev, b.w))
	}
	errs = append(errs, b.m.rt.SetMemPoolReleaseThreshold(dev, b.threshold))
	b.streams, b.in, b.out, b.w = nil, nil, nil, 0
	return errors.Join(errs...)
}

func maxInts(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
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
