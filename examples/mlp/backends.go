package main

import (
	"context"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
)

// backend runs one request of rows batch rows: x fills the staging buffer
// it is handed with the input and reads the output from its buffer. client
// is the load generator's client, for the backends that keep state per
// client. waited is how long the request waited for what the backend
// shares between requests (a slot, the mutex); zero where it shares
// nothing.
type backend interface {
	serve(ctx context.Context, client, rows int, x exchange) (waited time.Duration, err error)
	// pooled is the device bytes the backend's pool took: the arena.
	pooled() uint64
	// nodes are the node counts of its request graphs, by batch rows.
	nodes() map[int]cudart.GraphNodeCounts
	close() error
}

// graphNodes are the node counts of a backend's request graphs: by batch
// size, those of the graph with the most memory nodes.
type graphNodes struct {
	counts map[int]cudart.GraphNodeCounts
}

// note counts in the graph of rows rows that has counts c.
func (g *graphNodes) note(rows int, c cudart.GraphNodeCounts) {
	if g.counts == nil {
		g.counts = map[int]cudart.GraphNodeCounts{}
	}
	if old, ok := g.counts[rows]; !ok || c.Memory() > old.Memory() {
		g.counts[rows] = c
	}
}

func (g *graphNodes) nodes() map[int]cudart.GraphNodeCounts { return g.counts }

// workspace is each cuBLAS handle's workspace in the pool: what cuBLAS
// takes for itself on Hopper.
const workspace = cublas.DefaultWorkspace
