package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// profileName is the profile of a batch of rows.
func profileName(rows int) string { return fmt.Sprintf("batch%d", rows) }

// slotRefs are one profile's name and buffers.
type slotRefs struct {
	rows          int
	name          string
	in, out, x, y pool.Ref
}

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
	if b.params, err = shared.Device(m.Bytes(), pool.Name("params")); err != nil {
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
			{&r.in, true, uint64(4 * m.Dims[0] * rows), "in"}, {&r.out, true, uint64(4 * m.Dims[layers] * rows), "out"},
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
	layout := pool.SlotLayout{Shared: shared, Profiles: profiles, Attach: []pool.Attachment{lib.ForSlots(workspace)}}
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
	if h, err = pool.Attached[cublas.Lent](sl); err != nil {
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
