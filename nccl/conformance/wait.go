package conformance

import (
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
)

// testWait: Library.Wait, which polls the ranks' streams
// (cudaStreamQuery) and never synchronises, returns nil once an all-reduce
// is done on every rank, and the results are then there: an eager one, in
// one group, then graphs that captured one, launched on every rank twice
// before each wait. The bound is far above what either takes.
func (s *suite) testWait(t *testing.T) {
	const bound = 10 * time.Second
	st, ok := s.rt.(cudart.Streams)
	require.True(t, ok, "the runtime makes streams (cudart.Streams)")
	gr, ok := s.rt.(cudart.Graphs)
	require.True(t, ok, "the runtime captures graphs (cudart.Graphs)")
	w := newWorld(t, s.rt, s.lib, s.devs, count*4)
	qs := make([]nccl.Queued, w.n())
	for r := range w.n() {
		qs[r] = nccl.Queued{Comm: w.comms[r], Stream: w.s[r]}
	}
	w.fillRound(t, 0)
	require.NoError(t, s.lib.Group(w.allReduce()...), "the eager all-reduce")
	require.NoError(t, s.lib.Wait(st, bound, qs...), "Wait for the eager all-reduce")
	w.checkRound(t, 0)

	graphs := w.captureAllReduce(t, gr)
	execs := make([]cudart.GraphExec, w.n())
	for r := range w.n() {
		execs[r] = w.instantiate(t, gr, r, graphs[r])
	}
	for round := 1; round <= 2; round++ {
		w.fillRound(t, round)
		for range 2 {
			for r, d := range w.devs {
				require.NoError(t, gr.GraphLaunch(d, execs[r], w.s[r]), "GraphLaunch of round %d on rank %d", round, r)
			}
		}
		require.NoError(t, s.lib.Wait(st, bound, qs...), "Wait for round %d's two launches", round)
		w.checkRound(t, round)
	}
}
