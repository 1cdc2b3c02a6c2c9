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

// perClientBackend is the upper bound the slots approach: each client has
// its own stream, pinned staging, activations and graphs, taken once with
// cudaMalloc and cudaMallocHost, and shares only the weights. No pool, no
// lock, no hand-off: a request waits for nothing but its own work.
type perClientBackend struct {
	m       *model
	w       cudart.DevicePtr
	async   bool
	clients *baseline.Clients
}

func newPerClientBackend(m *model, clients int, batches []int, graphs bool) (*perClientBackend, error) {
	return newClients(m, clients, batches, false, graphs)
}

// newClients is a stream and pinned staging a client, activations taken
// once with cudaMalloc or in each request with cudaMallocAsync (async),
// graphs as asked, and the weights.
func newClients(m *model, clients int, batches []int, async, graphs bool) (_ *perClientBackend, err error) {
	b := &perClientBackend{m: m, async: async}
	size := m.rowBytes() * uint64(slices.Max(batches))
	sizes := baseline.Sizes{In: size, Out: size, Act: size}
	if async {
		sizes.Act = 0
	}
	if b.clients, err = baseline.NewClients(m.rt, dev, clients, sizes); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	if b.w, err = m.newWeights(); err != nil {
		return nil, err
	}
	for i := range b.clients.All {
		c := &b.clients.All[i]
		if graphs {
			if c.Graphs, err = m.captureEach(c.Stream, b.buffers(c), batches); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// buffers are where client c's requests run.
func (b *perClientBackend) buffers(c *baseline.Client) buffers {
	return buffers{in: c.In, out: c.Out, x: c.X, y: c.Y, w: b.w, async: b.async}
}

func (b *perClientBackend) serve(_ context.Context, client, rows int, x exchange) (time.Duration, error) {
	return b.clients.Serve(client, rows, func(c *baseline.Client, g cudart.GraphExec) error {
		return b.m.run(c.Stream, b.buffers(c), rows, g, x)
	})
}

func (b *perClientBackend) memory() string {
	c := b.clients.All[0]
	each := humanize.IBytes(uint64(len(c.In) + len(c.Out)))
	return fmt.Sprintf("device %s shared + %d × %s; host %d × %s", humanize.IBytes(b.m.weightBytes()), len(b.clients.All), each, len(b.clients.All), each)
}

func (b *perClientBackend) close() error {
	errs := []error{b.clients.Close(nil)}
	if b.w != 0 {
		errs = append(errs, b.m.rt.Free(dev, b.w))
	}
	b.w = 0
	return errors.Join(errs...)
}
