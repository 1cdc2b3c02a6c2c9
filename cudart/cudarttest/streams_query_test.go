package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// roundTrip queues on s a copy of e.src to e.d, then of e.d to e.host.
func (e queueEnv) roundTrip(t *testing.T, s cudart.Stream) {
	t.Helper()
	require.NoError(t, e.f.MemcpyAsync(0, dmem(e.d), cudart.HostMem(e.src), cudart.HostToDevice, s))
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, s))
}

// stream is a second stream of device 0, destroyed at cleanup.
func (e queueEnv) stream(t *testing.T) cudart.Stream {
	t.Helper()
	s, err := e.f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, e.f.StreamDestroy(0, s)) })
	return s
}

// A query runs the work it asks about only when it says done, so that a
// program that reads a result the query did not vouch for reads the bytes
// from before: the first query of new work says not done and runs
// nothing; the second runs it and says done.
func TestQueryRunsWorkOnlyWhenItSaysDone(t *testing.T) {
	tests := []struct {
		name  string
		query func(t *testing.T, e queueEnv) func() (bool, error)
	}{
		{"StreamQuery", func(t *testing.T, e queueEnv) func() (bool, error) {
			return func() (bool, error) { return e.f.StreamQuery(0, e.s) }
		}},
		{"StreamQuery of the legacy default stream", func(t *testing.T, e queueEnv) func() (bool, error) {
			return func() (bool, error) { return e.f.StreamQuery(0, 0) }
		}},
		{"EventQuery", func(t *testing.T, e queueEnv) func() (bool, error) {
			ev := mustEvent(t, e.f)
			require.NoError(t, e.f.EventRecord(0, ev, e.s))
			return func() (bool, error) { return e.f.EventQuery(0, ev) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newQueueEnv(t)
			e.roundTrip(t, e.s)
			query := tt.query(t, e)
			done, err := query()
			require.NoError(t, err)
			assert.False(t, done, "the first query")
			assert.Equal(t, oldBytes, e.host, "after a query that said not done")
			done, err = query()
			require.NoError(t, err)
			assert.True(t, done, "the second query")
			assert.Equal(t, newBytes, e.host, "after a query that said done")
		})
	}
}

// A query runs nothing but what it asks about: not another stream's work,
// nor a stream's work after the event queried.
func TestQueryRunsNothingElse(t *testing.T) {
	e := newQueueEnv(t)
	other := e.stream(t)
	e.roundTrip(t, other)
	for range 2 {
		done, err := e.f.StreamQuery(0, e.s)
		require.NoError(t, err)
		assert.True(t, done, "nothing queued on e.s")
	}
	assert.Equal(t, oldBytes, e.host, "the other stream's work")
	require.NoError(t, e.f.StreamSynchronize(0, other))
	require.Equal(t, newBytes, e.host, "the other stream's work, synchronised")

	copy(e.host, oldBytes)
	ev := mustEvent(t, e.f)
	require.NoError(t, e.f.EventRecord(0, ev, e.s))
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s))
	for range 2 {
		_, err := e.f.EventQuery(0, ev)
		require.NoError(t, err)
	}
	done, err := e.f.EventQuery(0, ev)
	require.NoError(t, err)
	require.True(t, done)
	assert.Equal(t, oldBytes, e.host, "the copy after the event's record")
}

// A stream that waits for an event waits for the work before the record,
// not for the work after it: synchronising the waiting stream runs only
// the former, as CUDA guarantees no more.
func TestWaitForAnEventRunsNothingAfterItsRecord(t *testing.T) {
	e := newQueueEnv(t)
	waiter := e.stream(t)
	ev := mustEvent(t, e.f)
	require.NoError(t, e.f.MemcpyAsync(0, dmem(e.d), cudart.HostMem(e.src), cudart.HostToDevice, e.s))
	require.NoError(t, e.f.EventRecord(0, ev, e.s))
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(e.host), dmem(e.d), cudart.DeviceToHost, e.s))
	require.NoError(t, e.f.StreamWaitEvent(0, waiter, ev))
	got := mustMallocHost(t, e.f, oldBytes)
	require.NoError(t, e.f.MemcpyAsync(0, cudart.HostMem(got), dmem(e.d), cudart.DeviceToHost, waiter))
	require.NoError(t, e.f.StreamSynchronize(0, waiter))
	assert.Equal(t, newBytes, got, "the waiter's copy ran after the work before the record")
	assert.Equal(t, oldBytes, e.host, "the copy after the record did not run")
	require.NoError(t, e.f.StreamSynchronize(0, e.s))
	assert.Equal(t, newBytes, e.host, "it runs when its own stream is synchronised")
}

// Work queued after a query said done is new to the next query, which says
// not done.
func TestQuerySeesNewWork(t *testing.T) {
	e := newQueueEnv(t)
	done, err := e.f.StreamQuery(0, e.s)
	require.NoError(t, err)
	require.True(t, done, "nothing queued")
	e.roundTrip(t, e.s)
	done, err = e.f.StreamQuery(0, e.s)
	require.NoError(t, err)
	assert.False(t, done, "new work")
	done, err = e.f.StreamQuery(0, e.s)
	require.NoError(t, err)
	assert.True(t, done, "the work seen")
	require.NoError(t, e.f.MemsetAsync(0, e.d, 0, queueBytes, e.s))
	done, err = e.f.StreamQuery(0, e.s)
	require.NoError(t, err)
	assert.False(t, done, "newer work")
}

// WithLongWork: no query finds work done, however often it asks; a
// synchronisation runs it.
func TestLongWorkRunsOnlyWhenSynchronised(t *testing.T) {
	e := newQueueEnv(t, cudarttest.WithLongWork())
	e.roundTrip(t, e.s)
	ev := mustEvent(t, e.f)
	require.NoError(t, e.f.EventRecord(0, ev, e.s))
	for range 3 {
		done, err := e.f.StreamQuery(0, e.s)
		require.NoError(t, err)
		assert.False(t, done, "StreamQuery")
		done, err = e.f.EventQuery(0, ev)
		require.NoError(t, err)
		assert.False(t, done, "EventQuery")
	}
	assert.Equal(t, oldBytes, e.host)
	require.NoError(t, e.f.StreamSynchronize(0, e.s))
	assert.Equal(t, newBytes, e.host)
	done, err := e.f.StreamQuery(0, e.s)
	require.NoError(t, err)
	assert.True(t, done, "nothing queued")
}

func mustEvent(t *testing.T, f *cudarttest.Fake) cudart.Event {
	t.Helper()
	ev, err := f.EventCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.EventDestroy(0, ev)) })
	return ev
}
