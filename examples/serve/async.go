package main

import (
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/examples/baseline"
)

// asyncBackend is stream-ordered allocation: a stream and pinned staging
// per client, the activations taken with cudaMallocAsync and given back
// with cudaFreeAsync in every request. The default memory pool keeps what
// it frees (release threshold at its maximum, put back at close), as a
// tuned server sets it. Addresses change from one request to the next, so
// a graph cannot be kept over fixed buffers; with graphs, the allocation
// and the free are captured into each client's graph as memory nodes.
type asyncBackend struct {
	*perClientBackend // with async buffers
	restore           func() error
}

func newAsyncBackend(m *model, clients int, batches []int, graphs bool) (_ *asyncBackend, err error) {
	b := &asyncBackend{}
	if b.restore, err = baseline.KeepFreed(m.rt, dev); err != nil {
		return nil, err
	}
	if b.perClientBackend, err = newClients(m, clients, batches, true, graphs); err != nil {
		return nil, errors.Join(err, b.restore())
	}
	return b, nil
}

func (b *asyncBackend) memory() string {
	return fmt.Sprintf("device: what cudaMallocAsync's pool or the graphs' memory nodes keep; host %s pinned per client", humanize.IBytes(2*uint64(len(b.clients.All[0].In))))
}

func (b *asyncBackend) close() error {
	return errors.Join(b.perClientBackend.close(), b.restore())
}
