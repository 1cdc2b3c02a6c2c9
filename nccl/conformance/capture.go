package conformance

import (
	"encoding/binary"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
)

// replays is how many times Capture launches each rank's graph.
const replays = 5

// testCapture captures an all-reduce on each rank's stream, each rank on
// its own goroutine calling the collective alone, in relaxed mode (a GPU a
// thread, as NCCL recommends for capture; one thread over every device
// must end every capture before it instantiates a graph: see the Caveats
// of package nccl), replays the graphs with new
// inputs and checks every result, and that the replays take no device
// memory. It asserts the nodes of each graph, what CUDA records for
// NCCL's collective: its kernel, and the event-wait and event-record nodes
// of the communicator's own stream (NCCL's strong stream, with graph
// mixing, its default), one each, as 2×H200 showed (NCCL 2.28.9, CUDA
// 13.0, 2 ranks, NVLink); logged, "nccl capture:", with the nodes in the
// order cudaGraphGetNodes gives, before the assertion.
func (s *suite) testCapture(t *testing.T) { s.capture(t) }

// capture is testCapture on communicators made with opts.
func (s *suite) capture(t *testing.T, opts ...nccl.CommOption) {
	gr, ok := s.rt.(cudart.Graphs)
	require.True(t, ok, "the runtime captures graphs (cudart.Graphs)")
	const n = count
	w := newWorld(t, s.rt, s.lib, s.devs, n*4, opts...)
	ranks := w.n()
	fill := func(round int) {
		for r := range ranks {
			b := make([]byte, n*4)
			for i := range n {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(round*1000+r*10+i%7))
			}
			w.put(t, r, w.send[r], b)
		}
	}
	check := func(round int) {
		for r := range ranks {
			got := w.get(t, r, w.recv[r], n*4)
			for i := range n {
				want := uint32(0)
				for q := range ranks {
					want += uint32(round*1000 + q*10 + i%7)
				}
				require.Equal(t, want, binary.LittleEndian.Uint32(got[4*i:]), "round %d, rank %d element %d", round, r, i)
			}
		}
	}
	// An eager all-reduce first: NCCL's charge of a first collective is
	// taken outside the graphs.
	fill(0)
	var group []nccl.Op
	for r := range ranks {
		group = append(group, w.comms[r].AllReduceOp(w.send[r], w.recv[r], n, nccl.Int32, nccl.Sum, w.s[r]))
	}
	require.NoError(t, s.lib.Group(group...), "the eager all-reduce")
	w.sync(t)
	check(0)

	graphs := make([]cudart.Graph, ranks)
	errs := make([]error, ranks)
	onRanks(ranks, func(r int) {
		d := w.devs[r]
		if errs[r] = gr.StreamBeginCapture(d, w.s[r], cudart.CaptureModeRelaxed); errs[r] != nil {
			return
		}
		err := w.comms[r].AllReduce(w.send[r], w.recv[r], n, nccl.Int32, nccl.Sum, w.s[r])
		g, endErr := gr.StreamEndCapture(d, w.s[r])
		graphs[r], errs[r] = g, err
		if errs[r] == nil {
			errs[r] = endErr
		}
	})
	for r := range ranks {
		require.NoError(t, errs[r], "rank %d: an all-reduce captured on its stream", r)
		t.Cleanup(func() { require.NoError(t, gr.GraphDestroy(w.devs[r], graphs[r]), "GraphDestroy") })
	}
	execs := make([]cudart.GraphExec, ranks)
	for r, d := range w.devs {
		nodes, err := cudart.CountGraphNodes(gr, d, graphs[r])
		require.NoError(t, err, "the nodes of rank %d's graph", r)
		order, err := cudart.GraphNodeTypes(gr, d, graphs[r])
		require.NoError(t, err, "the nodes of rank %d's graph", r)
		t.Logf("nccl capture: %d ranks, rank %d, device %d: %d nodes: %s; in order: %v", ranks, r, d, nodes.Total(), nodes, order)
		want := cudart.GraphNodeCounts{cudart.GraphNodeKernel: 1, cudart.GraphNodeWaitEvent: 1, cudart.GraphNodeEventRecord: 1}
		require.Equal(t, want, nodes, "rank %d's graph: NCCL's kernel and its stream's event wait and record", r)
		execs[r], err = gr.GraphInstantiate(d, graphs[r])
		require.NoError(t, err, "GraphInstantiate on rank %d", r)
		t.Cleanup(func() { require.NoError(t, gr.GraphExecDestroy(d, execs[r]), "GraphExecDestroy") })
	}
	launch := func(round int) {
		fill(round)
		for r, d := range w.devs {
			require.NoError(t, gr.GraphLaunch(d, execs[r], w.s[r]), "GraphLaunch of round %d on rank %d", round, r)
		}
		w.sync(t)
		check(round)
	}
	// The first launch may upload the graph; the replays after it must take
	// nothing more.
	launch(1)
	before := make([]uint64, ranks)
	for r, d := range w.devs {
		free, _, err := s.rt.MemGetInfo(d)
		require.NoError(t, err, "MemGetInfo")
		before[r] = free
	}
	for round := 2; round < 2+replays; round++ {
		launch(round)
	}
	for r, d := range w.devs {
		free, _, err := s.rt.MemGetInfo(d)
		require.NoError(t, err, "MemGetInfo")
		t.Logf("nccl capture: %d ranks, device %d: %d B free before %d replays, %d B after", ranks, d, before[r], replays, free)
		require.Equal(t, before[r], free, "device %d's free memory across %d replays of its graph", d, replays)
	}
}
