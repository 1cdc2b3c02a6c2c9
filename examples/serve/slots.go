package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"

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
// stream, and with graphs one CUDA graph per slot and profile.
type slotsBackend struct {
	m       *model
	s       *pool.Slots
	weights pool.Ref
	byRows  map[int]int // batch rows to index in prof, so that a request formats no name
	prof    []slotRefs
	graphs  capture.PerSlot // nil launching kernel by kernel
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
		return b, b.captureAll()
	}
	return b, nil
}

// captureAll captures every profile's graph on every slot.
func (b *slotsBackend) captureAll() (err error) {
	names := make([]string, len(b.prof))
	for i, r := range b.prof {
		names[i] = r.name
	}
	b.graphs, err = capture.EachSlot(b.m.rt, dev, b.s, names, func(sl pool.Slot, pi int) (cudart.GraphExec, error) {
		bufs, st, err := b.buffers(sl, b.prof[pi])
		if err != nil {
			return 0, err
		}
		return b.m.capture(st, bufs, b.prof[pi].rows)
	})
	return err
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
	return waited, b.m.run(st, bufs, rows, b.graphs.Of(sl, pi), x)
}

func (b *slotsBackend) memory() string {
	st := b.s.Stats()
	return fmt.Sprintf("device %s = %s shared + %d × %s; host %s = %s + %d × %s",
		humanize.IBytes(st.Device), humanize.IBytes(st.SharedDevice), st.Slots, humanize.IBytes(st.SlotDevice),
		humanize.IBytes(st.Host), humanize.IBytes(st.SharedHost), st.Slots, humanize.IBytes(st.SlotHost))
}

func (b *slotsBackend) close() error {
	err := b.graphs.Destroy(b.m.rt, dev)
	b.graphs = nil
	return errors.Join(err, b.s.Close())
}
