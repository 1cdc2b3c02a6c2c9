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
	w := newWorld(t, s.rt, s.lib, s.devs, count*4, opts...)
	// An eager all-reduce first: NCCL's charge of a first collective is
	// taken outside the graphs.
	w.fillRound(t, 0)
	require.NoError(t, s.lib.Group(w.allReduce()...), "the eager all-reduce")
	w.sync(t)
	w.checkRound(t, 0)

	graphs := w.captureAllReduce(t, gr)
	execs := make([]cudart.GraphExec, w.n())
	for r, d := range w.devs {
		nodes, err := cudart.CountGraphNodes(gr, d, graphs[r])
		require.NoError(t, err, "the nodes of rank %d's graph", r)
		order, err := cudart.GraphNodeTypes(gr, d, graphs[r])
		require.NoError(t, err, "the nodes of rank %d's graph", r)
		t.Logf("nccl capture: %d ranks, rank %d, device %d: %d nodes: %s; in order: %v", w.n(), r, d, nodes.Total(), nodes, order)
		want := cudart.GraphNodeCounts{cudart.GraphNodeKernel: 1, cudart.GraphNodeWaitEvent: 1, cudart.GraphNodeEventRecord: 1}
		require.Equal(t, want, nodes, "rank %d's graph: NCCL's kernel and its stream's event wait and record", r)
		execs[r] = w.instantiate(t, gr, r, graphs[r])
	}
	launch := func(round int) {
		w.fillRound(t, round)
		for r, d := range w.devs {
			require.NoError(t, gr.GraphLaunch(d, execs[r], w.s[r]), "GraphLaunch of round %d on rank %d", round, r)
		}
		w.sync(t)
		w.checkRound(t, round)
	}
	// The first launch may upload the graph; the replays after it must take
	// nothing more.
	launch(1)
	before := make([]uint64, w.n())
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
		t.Logf("nccl capture: %d ranks, device %d: %d B free before %d replays, %d B after", w.n(), d, before[r], replays, free)
		require.Equal(t, before[r], free, "device %d's free memory across %d replays of its graph", d, replays)
	}
}

// fillRound writes each rank's send buffer of count int32s for round: a
// value of the round, the rank and the element.
func (w *world) fillRound(t *testing.T, round int) {
	t.Helper()
	for r := range w.n() {
		b := make([]byte, count*4)
		for i := range count {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(round*1000+r*10+i%7))
		}
		w.put(t, r, w.send[r], b)
	}
}

// checkRound checks that each rank's recv buffer holds the sum of every
// rank's fillRound of round.
func (w *world) checkRound(t *testing.T, round int) {
	t.Helper()
	for r := range w.n() {
		got := w.get(t, r, w.recv[r], count*4)
		for i := range count {
			want := uint32(0)
			for q := range w.n() {
				want += uint32(round*1000 + q*10 + i%7)
			}
			require.Equal(t, want, binary.LittleEndian.Uint32(got[4*i:]), "round %d, rank %d element %d", round, r, i)
		}
	}
}

// allReduce is an all-reduce of count int32s from send to recv on every
// rank, for one group.
func (w *world) allReduce() []nccl.Op {
	var group []nccl.Op
	for r := range w.n() {
		group = append(group, w.comms[r].AllReduceOp(w.send[r], w.recv[r], count, nccl.Int32, nccl.Sum, w.s[r]))
	}
	return group
}

// captureAllReduce captures the all-reduce of allReduce on each rank's
// stream, each rank on its own goroutine calling the collective alone, in
// relaxed mode; the graphs are destroyed at cleanup.
func (w *world) captureAllReduce(t *testing.T, gr cudart.Graphs) []cudart.Graph {
	t.Helper()
	graphs := make([]cudart.Graph, w.n())
	errs := make([]error, w.n())
	onRanks(w.n(), func(r int) {
		d := w.devs[r]
		if errs[r] = gr.StreamBeginCapture(d, w.s[r], cudart.CaptureModeRelaxed); errs[r] != nil {
			return
		}
		err := w.comms[r].AllReduce(w.send[r], w.recv[r], count, nccl.Int32, nccl.Sum, w.s[r])
		g, endErr := gr.StreamEndCapture(d, w.s[r])
		graphs[r], errs[r] = g, err
		if errs[r] == nil {
			errs[r] = endErr
		}
	})
	for r := range w.n() {
		require.NoError(t, errs[r], "rank %d: an all-reduce captured on its stream", r)
		t.Cleanup(func() { require.NoError(t, gr.GraphDestroy(w.devs[r], graphs[r]), "GraphDestroy") })
	}
	return graphs
}

// instantiate instantiates rank r's graph g, destroyed at cleanup.
func (w *world) instantiate(t *testing.T, gr cudart.Graphs, r int, g cudart.Graph) cudart.GraphExec {
	t.Helper()
	d := w.devs[r]
	e, err := gr.GraphInstantiate(d, g)
	require.NoError(t, err, "GraphInstantiate on rank %d", r)
	t.Cleanup(func() { require.NoError(t, gr.GraphExecDestroy(d, e), "GraphExecDestroy") })
	return e
}
