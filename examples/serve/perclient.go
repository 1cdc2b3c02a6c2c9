package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
)

// perClientBackend is the upper bound the slots approach: each client has
// its own stream, pinned staging, activations and graphs, taken once with
// cudaMalloc and cudaMallocHost, and shares only the weights. No pool, no
// lock, no hand-off: a request waits for nothing but its own work.
type perClientBackend struct {
	m       *model
	w       cudart.DevicePtr
	clients []clientState
}

// clientState is one client's stream and buffers.
type clientState struct {
	st     cudart.Stream
	bufs   buffers
	graphs capture.ByRows // nil launching kernel by kernel
}

func newPerClientBackend(m *model, clients int, batches []int, graphs bool) (*perClientBackend, error) {
	return newClients(m, clients, batches, false, graphs)
}

// newClients is a stream and pinned staging a client, activations taken
// once with cudaMalloc or in each request with cudaMallocAsync (async),
// graphs as asked, and the weights.
func newClients(m *model, clients int, batches []int, async, graphs bool) (_ *perClientBackend, err error) {
	b := &perClientBackend{m: m}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	if b.w, err = m.newWeights(); err != nil {
		return nil, err
	}
	size := m.rowBytes() * uint64(slices.Max(batches))
	b.clients = make([]clientState, 0, clients)
	for range clients {
		// Kept from the start, for close to free what was taken.
		b.clients = append(b.clients, clientState{bufs: buffers{w: b.w, async: async}})
		c := &b.clients[len(b.clients)-1]
		if c.st, err = m.rt.StreamCreate(dev); err != nil {
			return nil, err
		}
		for _, h := range []*[]byte{&c.bufs.in, &c.bufs.out} {
			if *h, err = m.rt.MallocHost(dev, size); err != nil {
				return nil, err
			}
		}
		for _, d := range []*cudart.DevicePtr{&c.bufs.x, &c.bufs.y} {
			if async {
				break
			}
			if *d, err = m.rt.Malloc(dev, size); err != nil {
				return nil, err
			}
		}
		if graphs {
			if c.graphs, err = m.captureEach(c.st, c.bufs, batches); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *perClientBackend) serve(_ context.Context, client, rows int, x exchange) (time.Duration, error) {
	c := &b.clients[client]
	g, err := c.graphs.For(rows)
	if err != nil {
		return 0, err
	}
	return 0, b.m.run(c.st, c.bufs, rows, g, x)
}

func (b *perClientBackend) memory() string {
	c := b.clients[0].bufs
	each := humanize.IBytes(uint64(len(c.in) + len(c.out)))
	return fmt.Sprintf("device %s shared + %d × %s; host %d × %s", humanize.IBytes(b.m.weightBytes()), len(b.clients), each, len(b.clients), each)
}

func (b *perClientBackend) close() error {
	var errs []error
	for _, c := range b.clients {
		errs = append(errs, c.graphs.Destroy(b.m.rt, dev))
		if c.st != 0 {
			errs = append(errs, b.m.rt.StreamSynchronize(dev, c.st), b.m.rt.StreamDestroy(dev, c.st))
		}
		for _, h := range [][]byte{c.bufs.in, c.bufs.out} {
			if h != nil {
				errs = append(errs, b.m.rt.FreeHost(h))
			}
		}
		for _, d := range []cudart.DevicePtr{c.bufs.x, c.bufs.y} {
			if d != 0 {
				errs = append(errs, b.m.rt.Free(dev, d))
			}
		}
	}
	if b.w != 0 {
		errs = append(errs, b.m.rt.Free(dev, b.w))
	}
	b.clients, b.w = nil, 0
	return errors.Join(errs...)
}
