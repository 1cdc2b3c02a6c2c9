package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/baseline"
)

// mutexBackend is today's way: one pool, one set of buffers and one stream,
// one request at a time behind a mutex, with graphs one per profile.
type mutexBackend struct {
	m    *model
	base *baseline.Mutex
	bufs buffers
}

func newMutexBackend(m *model, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	size := m.rowBytes() * uint64(slices.Max(batches))
	if b.base, err = baseline.NewMutex(m.rt, dev, []baseline.Want{
		{Name: "in", Size: size, Host: true}, {Name: "out", Size: size, Host: true}, {Name: "weights.staging", Size: m.weightBytes(), Host: true},
		{Name: "x", Size: size}, {Name: "y", Size: size}, {Name: "weights", Size: m.weightBytes()},
	}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	d, h := b.base.Device, b.base.Host
	b.bufs = buffers{in: h["in"], out: h["out"], x: d["x"], y: d["y"], w: d["weights"]}
	if err := m.loadWeights(b.bufs.w, h["weights.staging"]); err != nil {
		return nil, err
	}
	if graphs {
		b.base.Graphs, err = m.captureEach(b.base.Stream, b.bufs, batches)
	}
	return b, err
}

func (b *mutexBackend) serve(_ context.Context, _, rows int, x exchange) (time.Duration, error) {
	return b.base.Serve(rows, func(g cudart.GraphExec) error { return b.m.run(b.base.Stream, b.bufs, rows, g, x) })
}

func (b *mutexBackend) memory() string {
	st := b.base.Pool.Stats()
	return fmt.Sprintf("device %s, host %s", humanize.IBytes(st.Device.Used), humanize.IBytes(st.Host.Used))
}

func (b *mutexBackend) close() error { return b.base.Close() }
