package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/baseline"
)

// mutexBackend is one pool, one set of buffers, one stream and one handle
// with its workspace in the pool, one request at a time behind a mutex,
// with graphs one per profile.
type mutexBackend struct {
	graphNodes
	m    *model
	base *baseline.Mutex
	h    *cublas.Handle
	bufs buffers
}

func newMutexBackend(m *model, lib *cublas.Library, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	most := slices.Max(batches)
	act := m.actBytes(most)
	if b.base, err = baseline.NewMutex(m.rt, dev, []baseline.Want{
		{Name: "in", Size: uint64(4 * m.Dims[0] * most), Host: true}, {Name: "out", Size: uint64(4 * m.Dims[layers] * most), Host: true},
		{Name: "x", Size: act}, {Name: "y", Size: act}, {Name: "params", Size: m.Bytes()},
		{Name: "cublas workspace", Size: workspace},
	}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	d, h := b.base.Device, b.base.Host
	b.bufs = buffers{in: h["in"], out: h["out"], x: d["x"], y: d["y"], w: d["params"]}
	if err := m.loadParams(b.bufs.w); err != nil {
		return nil, err
	}
	if b.h, err = lib.NewHandle(dev, b.base.Stream); err != nil {
		return nil, err
	}
	if err := b.h.SetWorkspace(b.base.Buffers["cublas workspace"]); err != nil {
		return nil, err
	}
	if graphs {
		if b.base.Graphs, err = m.captureEach(b.base.Stream, b.h, b.bufs, batches, &b.graphNodes); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *mutexBackend) serve(_ context.Context, _, rows int, x exchange) (time.Duration, error) {
	return b.base.Serve(rows, func(g cudart.GraphExec) error { return b.m.run(b.base.Stream, b.h, b.bufs, rows, g, x) })
}

func (b *mutexBackend) pooled() uint64 { return b.base.Pool.Stats().Device.Mapped }

// close gives back what newMutexBackend made, the handle before the pool
// that holds its workspace.
func (b *mutexBackend) close() error { return b.base.Close(b.h.Close) }
