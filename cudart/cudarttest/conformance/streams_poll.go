package conformance

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
)

// pollBound is far more than a GPU takes to fill 256 KiB, or the fake.
const pollBound = 10 * time.Second

// testPolling: queued work completes with no synchronisation, as a GPU
// runs it: a loop that polls cudaStreamQuery after a kernel, or
// cudaEventQuery of an event recorded after it, ends within a bound, and
// the kernel's results are then there for a copy on another stream, which
// waits for nothing of the first, synchronised alone. How many queries a
// loop took is logged, "polling:".
func (s *suite) testPolling(t *testing.T, ev cudart.Events) {
	ks := s.loadKernels(t)
	st, s1 := s.stream(t)
	_, s2 := s.stream(t)
	const n = 1 << 16
	x := s.malloc(t, 4*n)
	out := s.pinned(t, 4*n)
	// filledWith copies x to the host on s2 and checks it holds value.
	filledWith := func(t *testing.T, value uint32) {
		t.Helper()
		clear(out)
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(x, 4*n), cudart.DeviceToHost, s2))
		require.NoError(t, st.StreamSynchronize(s.dev, s2))
		for _, i := range []int{0, n / 2, n - 1} {
			require.Equal(t, value, binary.LittleEndian.Uint32(out[4*i:]), "word %d, copied on another stream once the query said done", i)
		}
	}
	t.Run("StreamQuery", func(t *testing.T) {
		require.NoError(t, ks.fillLaunch(s.dev, x, n, 0x5151, s1))
		polls := poll(t, func() (bool, error) { return st.StreamQuery(s.dev, s1) })
		t.Logf("polling: cudaStreamQuery after a fill of %d words: done at query %d", n, polls)
		filledWith(t, 0x5151)
	})
	t.Run("EventQuery", func(t *testing.T) {
		e := s.event(t, ev)
		require.NoError(t, ks.fillLaunch(s.dev, x, n, 0x5252, s1))
		require.NoError(t, ev.EventRecord(s.dev, e, s1))
		polls := poll(t, func() (bool, error) { return ev.EventQuery(s.dev, e) })
		t.Logf("polling: cudaEventQuery after a fill of %d words: done at query %d", n, polls)
		filledWith(t, 0x5252)
	})
}

// poll calls query until it says done, failing t past pollBound, and
// returns how many calls it took.
func poll(t *testing.T, query func() (bool, error)) int {
	t.Helper()
	deadline := time.Now().Add(pollBound)
	for queries := 1; ; queries++ {
		done, err := query()
		require.NoError(t, err, "query %d", queries)
		if done {
			return queries
		}
		require.True(t, time.Now().Before(deadline), "not done after %v and %d queries", pollBound, queries)
		time.Sleep(100 * time.Microsecond)
	}
}
