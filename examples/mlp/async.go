package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
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
	graphs capture.ByRows // nil launching call by call
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
	if b.w, err = m.rt.Malloc(dev, m.Bytes()); err != nil {
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
		if c.bufs.in, err = m.rt.MallocHost(dev, uint64(4*m.Dims[0]*most)); err != nil {
			return nil, err
		}
		if c.bufs.out, err = m.rt.MallocHost(dev, uint64(4*m.Dims[layers]*most)); err != nil {
			return nil, err
		}
		if !graphs {
			continue
		}
		if c.graphs, err = m.captureEach(c.st, c.h, c.bufs, batches, &b.graphNodes); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *asyncBackend) serve(_ context.Context, client, rows int, x exchange) (time.Duration, error) {
	c := &b.clients[client]
	g, err := c.graphs.For(rows)
	if err != nil {
		return 0, err
	}
	return 0, b.m.run(c.st, c.h, c.bufs, rows, g, x)
}

func (b *asyncBackend) pooled() uint64 { return 0 }

func (b *asyncBackend) close() error {
	var errs []error
	for _, c := range b.clients {
		errs = append(errs, c.graphs.Destroy(b.m.rt, dev))
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
