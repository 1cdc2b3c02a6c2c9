package nccl

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// blockingKids are blocking splits of twoRanks' communicators, with opts.
func blockingKids(t *testing.T, comms []*Comm, opts ...CommOption) []*Comm {
	t.Helper()
	t.Cleanup(func() {
		for _, c := range comms {
			assert.NoError(t, c.Destroy())
		}
	})
	kids := make([]*Comm, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			var err error
			kids[r], err = c.Split(0, r, append(opts, WithInlineLaunch())...)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for _, k := range kids {
		require.NotNil(t, k)
		t.Cleanup(func() { assert.NoError(t, k.Destroy()) })
	}
	return kids
}

// TestFakeRefusesMixedModesInAGroup holds the fake to NCCL's rule, which
// the binding's Group keeps before NCCL sees anything: a split of a
// blocking parent and one of a non-blocking parent in one group are
// refused with ncclInvalidArgument (ncclAsyncLaunch in group.cc), and so
// are operations of both kinds (NCCL would give the group the last
// communicator's mode).
func TestFakeRefusesMixedModesInAGroup(t *testing.T) {
	l, comms := twoRanks(t)
	kids := blockingKids(t, comms)
	for _, tc := range []struct {
		name string
		a, b ncclabi.Frame
	}{
		{"splits", ncclabi.Frame{Call: ncclabi.CommSplit, Device: 0, Comm: kids[0].raw, Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)},
			ncclabi.Frame{Call: ncclabi.CommSplit, Device: 1, Comm: comms[1].raw, Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)}},
		{"operations", ncclabi.Frame{Call: ncclabi.AllReduce, Device: 0, Comm: kids[0].raw, Type: ncclabi.Int32},
			ncclabi.Frame{Call: ncclabi.AllReduce, Device: 1, Comm: comms[1].raw, Type: ncclabi.Int32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := []ncclabi.Frame{{Call: ncclabi.GroupStart}, tc.a, tc.b, {Call: ncclabi.GroupEnd}}
			n, err := l.be.Do(fs)
			require.NoError(t, err)
			require.Equal(t, 3, n, "the second call is refused")
			assert.Equal(t, ncclabi.InvalidArgument, fs[2].Result)
			assert.Equal(t, ncclabi.InvalidArgument, fs[3].Result, "the group end returns the group's error")
			q := []ncclabi.Frame{{Call: ncclabi.GetLastError}}
			_, err = l.be.Do(q)
			require.NoError(t, err)
			assert.Contains(t, q[0].Str, "Blocking and nonblocking communicators are not allowed in the same group.")
		})
	}
}

// TestBlockingCallsEndTheirGoroutines: the workers and the watcher of
// blocking calls end once none has been in flight for watchLinger, the
// last call's bound past.
func TestBlockingCallsEndTheirGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for watchLinger twice")
	}
	const bound = 100 * time.Millisecond
	_, comms := twoRanks(t)
	kids := blockingKids(t, comms, WithTimeout(bound))
	l := kids[0].l
	var wg sync.WaitGroup
	for _, k := range kids {
		wg.Go(func() { assert.NoError(t, k.AllReduce(0, 0, 0, Float32, Sum, 0)) })
	}
	wg.Wait()
	l.calls.mu.Lock()
	running, idle := l.calls.running, len(l.calls.idle)
	l.calls.mu.Unlock()
	require.True(t, running, "the watcher, after a call on each rank")
	require.Equal(t, 2, idle, "a worker a rank's call, both idle")
	require.Eventually(t, func() bool {
		l.calls.mu.Lock()
		defer l.calls.mu.Unlock()
		return !l.calls.running && len(l.calls.idle) == 0
	}, bound+3*watchLinger, 10*time.Millisecond)
}
