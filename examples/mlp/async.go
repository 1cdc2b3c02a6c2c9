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
	m       *model
	w       cudart.DevicePtr
	clients *baseline.Clients
	handles []*cublas.Handle // a client's, by its index
	restore func() error
}

func newAsyncBackend(m *model, lib *cublas.Library, clients int, batches []int, graphs bool) (_ *asyncBackend, err error) {
	b := &asyncBackend{m: m}
	if b.restore, err = baseline.KeepFreed(m.rt, dev); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	if b.w, err = m.rt.Malloc(dev, m.Bytes()); err != nil {
		return nil, err
	}
	if err := m.loadParams(b.w); err != nil {
		return nil, err
	}
	most := slices.Max(batches)
	if b.clients, err = baseline.NewClients(m.rt, dev, clients, baseline.Sizes{In: uint64(4 * m.Dims[0] * most), Out: uint64(4 * m.Dims[layers] * most)}); err != nil {
		return nil, err
	}
	b.handles = make([]*cublas.Handle, clients)
	for i := range b.clients.All {
		c := &b.clients.All[i]
		if b.handles[i], err = lib.NewHandle(dev, c.Stream); err != nil {
			return nil, err
		}
		if !graphs {
			continue
		}
		if c.Graphs, err = m.captureEach(c.Stream, b.handles[i], b.buffers(c), batches, &b.graphNodes); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// buffers are where client c's requests run.
func (b *asyncBackend) buffers(c *baseline.Client) buffers {
	return buffers{in: c.In, out: c.Out, w: b.w, async: true}
}

func (b *asyncBackend) serve(_ context.Context, client, rows int, x exchange) (time.Duration, error) {
	return b.clients.Serve(client, rows, func(c *baseline.Client, g cudart.GraphExec) error {
		return b.m.run(c.Stream, b.handles[client], b.buffers(c), rows, g, x)
	})
}

func (b *asyncBackend) pooled() uint64 { return 0 }

func (b *asyncBackend) close() error {
	var errs []error
	if b.clients != nil {
		errs = append(errs, b.clients.Close(func(i int) error { return b.handles[i].Close() }))
	}
	if b.w != 0 {
		errs = append(errs, b.m.rt.Free(dev, b.w))
	}
	b.clients, b.handles, b.w = nil, nil, 0
	// The pool gives back what it kept past its threshold at the next
	// synchronisation: here, not in the next configuration's setup, whose
	// device memory would seem to shrink by it.
	errs = append(errs, b.restore())
	return errors.Join(append(errs, b.m.rt.DeviceSynchronize(dev))...)
}
