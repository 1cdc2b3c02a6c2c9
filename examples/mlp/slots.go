package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
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
	graphs capture.PerSlot // nil launching call by call
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
		return b, b.captureAll()
	}
	return b, nil
}

// captureAll captures every profile's graph on every slot. A graph with a
// memory node is an error: the slot's handle works in the slot's workspace.
func (b *slotsBackend) captureAll() (err error) {
	names := make([]string, len(b.prof))
	for i, r := range b.prof {
		names[i] = r.name
	}
	b.graphs, err = capture.EachSlot(b.m.rt, dev, b.s, names, func(sl pool.Slot, pi int) (cudart.GraphExec, error) {
		r := b.prof[pi]
		bufs, st, h, err := b.buffers(sl, r)
		if err != nil {
			return 0, err
		}
		x, counts, err := b.m.capture(st, h, bufs, r.rows)
		if err != nil {
			return 0, err
		}
		b.note(r.rows, counts)
		if counts.Memory() != 0 {
			err = fmt.Errorf("the graph of slot %d, %s, has %d memory nodes (%v), want 0", sl.Index(), r.name, counts.Memory(), counts)
		}
		return x, err
	})
	return err
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
	return waited, b.m.run(st, h, bufs, rows, b.graphs.Of(sl, pi), x)
}

func (b *slotsBackend) pooled() uint64 { return b.s.Stats().Pool.Device.Mapped }

func (b *slotsBackend) close() error {
	err := b.graphs.Destroy(b.m.rt, dev)
	b.graphs = nil
	return errors.Join(err, b.s.Close())
}
