package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// blockingQuery holds each stream query until proceed is closed, having
// said so on entered.
type blockingQuery struct {
	*cudarttest.Fake
	entered chan struct{}
	proceed chan struct{}
}

func (q blockingQuery) StreamQuery(dev int, s cudart.Stream) (bool, error) {
	q.entered <- struct{}{}
	<-q.proceed
	return q.Fake.StreamQuery(dev, s)
}

// TestCloseWaitsForAReleaseAskingCUDA: Release checks that the slots are
// open without their lock, then asks CUDA about the slot's stream; a Close
// begun meanwhile waits for that question before it destroys the stream.
// The Release then succeeds (asked about a destroyed stream, it would fail)
// and Close leaves nothing behind.
func TestCloseWaitsForAReleaseAskingCUDA(t *testing.T) {
	q := blockingQuery{Fake: cudarttest.NewFakeT(t), entered: make(chan struct{}, 16), proceed: make(chan struct{})}
	s, err := pool.NewSlots(q, 1, newServingLayout(t).layout())
	require.NoError(t, err)
	sl := must(s.Acquire(context.Background(), "b1"))
	released := make(chan error, 1)
	go func() { released <- s.Release(sl) }()
	<-q.entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	waitUntil(t, "Close has begun", func() bool { return s.Stats().Closed })
	// Time for a Close that did not wait to destroy the stream.
	time.Sleep(20 * time.Millisecond)
	close(q.proceed)
	assert.NoError(t, <-released, "the stream was alive when asked")
	assert.NoError(t, <-closed)
	assert.True(t, q.Live().Empty(), "%+v", q.Live())
}

// TestAResetSeenAtReleaseFailsEveryWaiter: a Release after a reset of the
// device hands its slot to no one: every Acquire waiting then returns
// ErrDeviceReset, as one called then would, and the slot is not lost.
func TestAResetSeenAtReleaseFailsEveryWaiter(t *testing.T) {
	const waiters = 3
	f := cudarttest.NewFakeT(t)
	s, err := pool.NewSlots(f, 1, newServingLayout(t).layout())
	require.NoError(t, err)
	ctx := context.Background()
	held := must(s.Acquire(ctx, "b1"))
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := s.Acquire(ctx, "b8")
			errs <- err
		}()
	}
	waitUntil(t, "the Acquires wait", func() bool { return s.Stats().Waiting == waiters })
	require.NoError(t, f.DeviceReset(0))
	require.NoError(t, s.Release(held))
	for range waiters {
		assert.ErrorIs(t, <-errs, pool.ErrDeviceReset)
	}
	st := s.Stats()
	assert.Equal(t, 1, st.Ready+st.Draining, "%+v", st)
	assert.Zero(t, st.Waiting+st.InUse, "%+v", st)
	assert.Zero(t, st.Profiles[1].Acquisitions, "no waiter was counted as served")
	assert.ErrorIs(t, s.Close(), pool.ErrDeviceReset)
}

// busyQuery says the busy stream's work has not finished, calling during
// (once) as it is asked.
type busyQuery struct {
	*cudarttest.Fake
	busy   cudart.Stream
	during func()
}

func (q *busyQuery) StreamQuery(dev int, s cudart.Stream) (bool, error) {
	if s != q.busy {
		return q.Fake.StreamQuery(dev, s)
	}
	if f := q.during; f != nil {
		q.during = nil
		f()
	}
	return false, nil
}

// TestASlotFreedWhileAcquireAsksIsTaken: an Acquire that asks CUDA about
// the oldest released slot, and finds it busy, takes a slot freed
// meanwhile rather than waiting behind it: a ready slot is one no waiter
// takes, so the calls after it would take it first.
func TestASlotFreedWhileAcquireAsksIsTaken(t *testing.T) {
	q := &busyQuery{Fake: cudarttest.NewFakeT(t)}
	s, err := pool.NewSlots(q, 2, newServingLayout(t).layout())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx := context.Background()
	a, b := must(s.Acquire(ctx, "b1")), must(s.Acquire(ctx, "b1"))
	q.busy = must(b.Stream())
	require.NoError(t, s.Release(b))
	require.Equal(t, 1, s.Stats().Draining)
	q.during = func() { assert.NoError(t, s.Release(a)) }
	got, err := s.Acquire(ctx, "b8")
	require.NoError(t, err)
	assert.Equal(t, a.Index(), got.Index(), "the slot freed while CUDA was asked")
	assert.Zero(t, s.Stats().Profiles[1].Waits)
	require.NoError(t, s.Release(got))
}
