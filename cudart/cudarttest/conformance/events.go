package conformance

import (
	"math"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// event creates an event destroyed at cleanup.
func (s *suite) event(t *testing.T, ev cudart.Events) cudart.Event {
	t.Helper()
	e, err := ev.EventCreate(s.dev)
	require.NoError(t, err)
	require.NotZero(t, e)
	once(t, calls.EventDestroy, func() error { return ev.EventDestroy(s.dev, e) })
	return e
}

// testEvents: an event recorded on one stream orders the work of another
// after it (StreamWaitEvent), and times the work between two events; a
// record on a destroyed stream is refused.
func (s *suite) testEvents(t *testing.T, ev cudart.Events) {
	ks := s.loadKernels(t)
	_, s1 := s.stream(t)
	_, s2 := s.stream(t)
	const n = 1 << 20
	x, y := s.malloc(t, 4*n), s.malloc(t, 4*n)
	require.NoError(t, s.rt.Memset(s.dev, y, 0, 4*n))
	start, filled, done := s.event(t, ev), s.event(t, ev), s.event(t, ev)

	ready, err := ev.EventQuery(s.dev, start)
	require.NoError(t, err)
	assert.True(t, ready, "an event never recorded has completed")

	require.NoError(t, ev.EventRecord(s.dev, start, s1))
	require.NoError(t, ks.fillLaunch(s.dev, x, n, math.Float32bits(1.5), s1))
	require.NoError(t, ev.EventRecord(s.dev, filled, s1))
	require.NoError(t, ev.StreamWaitEvent(s.dev, s2, filled))
	require.NoError(t, ks.k.LaunchKernel(s.dev, ks.axpy, cudart.Dim1(n/256), cudart.Dim1(256), 0, s2,
		cudart.Arg(y), cudart.Arg(x), cudart.Arg[float32](2), cudart.Arg[uint32](n)))
	require.NoError(t, ev.EventRecord(s.dev, done, s2))
	require.NoError(t, ev.EventSynchronize(s.dev, done))

	ready, err = ev.EventQuery(s.dev, done)
	require.NoError(t, err)
	assert.True(t, ready, "after EventSynchronize")
	w := s.words(t, y, n)
	for _, i := range []int{0, n / 2, n - 1} {
		assert.Equal(t, float32(3), math.Float32frombits(w[i]), "y[%d]: axpy on s2 ran after fill on s1", i)
	}
	took, err := ev.EventElapsedTime(s.dev, start, done)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, int64(took), int64(0))
	t.Logf("fill and axpy of %d floats on two streams: %v between the events", n, took)

	fresh := s.event(t, ev)
	_, err = ev.EventElapsedTime(s.dev, start, fresh)
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "an event never recorded has no time")

	st := need[cudart.Streams](t, s.rt)
	dead, err := st.StreamCreate(s.dev)
	require.NoError(t, err)
	require.NoError(t, st.StreamDestroy(s.dev, dead))
	err = ev.EventRecord(s.dev, fresh, dead)
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "a record on a destroyed stream, which checks a stream")
}
