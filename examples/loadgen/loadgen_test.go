package loadgen

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunSendsEachRequestOnceFromAtMostClients(t *testing.T) {
	for _, tc := range []struct{ clients, requests int }{{1, 1}, {1, 50}, {4, 3}, {8, 1000}} {
		var mu sync.Mutex
		sent := map[int]int{}
		var inFlight, most atomic.Int64
		r, err := Run(tc.clients, tc.requests, func(c, i int) (time.Duration, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			assert.True(t, c >= 0 && c < tc.clients, "client %d of %d", c, tc.clients)
			mu.Lock()
			sent[i]++
			mu.Unlock()
			return 0, nil
		})
		require.NoError(t, err)
		assert.Equal(t, tc.requests, r.Requests)
		assert.Len(t, sent, tc.requests, "clients=%d requests=%d", tc.clients, tc.requests)
		for i := range tc.requests {
			assert.Equal(t, 1, sent[i], "request %d", i)
		}
		assert.LessOrEqual(t, most.Load(), int64(tc.clients), "requests in flight at once")
		assert.Positive(t, r.PerSecond)
		assert.Empty(t, r.Name)
	}
}

// TestRunTakesTheWaitOutOfTheService: a request's wait is its own figure,
// and what is left of its latency is its service.
func TestRunTakesTheWaitOutOfTheService(t *testing.T) {
	const wait, service = 2 * time.Millisecond, 3 * time.Millisecond
	r, err := Run(1, 5, func(_, _ int) (time.Duration, error) {
		time.Sleep(wait + service)
		return wait, nil
	})
	require.NoError(t, err)
	assert.Equal(t, Percentiles{wait, wait}, r.Wait)
	assert.GreaterOrEqual(t, r.Service.P50, service)
	assert.Less(t, r.Service.P50, wait+service, "the wait is not counted twice")
	assert.GreaterOrEqual(t, r.Elapsed, 5*(wait+service))
}

func TestRunStopsAtTheFirstError(t *testing.T) {
	errBad := errors.New("bad answer")
	var sent atomic.Int64
	_, err := Run(2, 1000, func(_, i int) (time.Duration, error) {
		sent.Add(1)
		if i == 10 {
			return 0, errBad
		}
		return 0, nil
	})
	require.ErrorIs(t, err, errBad)
	assert.EqualError(t, err, "request 10: bad answer")
	assert.Less(t, sent.Load(), int64(1000), "the clients stopped")
}

func TestRatio(t *testing.T) {
	a, b := &Result{PerSecond: 150}, &Result{PerSecond: 100}
	assert.Equal(t, "1.50x", Ratio(a, b))
	assert.Equal(t, "0.67x", Ratio(b, a))
	assert.Equal(t, "-", Ratio(nil, b))
	assert.Equal(t, "-", Ratio(a, nil))
}

func TestPercentilesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want Percentiles
	}{
		{"one", 1, Percentiles{1, 1}},
		{"two", 2, Percentiles{2, 2}},
		{"hundred", 100, Percentiles{51, 100}},
		{"thousand", 1000, Percentiles{501, 991}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := make([]time.Duration, tc.n)
			for i := range d {
				d[i] = time.Duration(tc.n - i) // reversed: PercentilesOf sorts
			}
			assert.Equal(t, tc.want, PercentilesOf(d))
		})
	}
}

func TestRound(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		1234567890:  1230 * time.Millisecond,
		12345678:    12350 * time.Microsecond,
		123456:      123500 * time.Nanosecond,
		12345:       12300 * time.Nanosecond,
		1234:        1230 * time.Nanosecond,
		5:           10 * time.Nanosecond,
		4:           0,
		time.Second: time.Second,
	} {
		assert.Equal(t, want, Round(in), "Round(%v)", in)
	}
}

// RunFixed sends each client's requests 0 to perClient-1, in order, and no
// other, and stops every client at the first error, naming the client.
func TestRunFixedSendsEachClientsRequestsInOrder(t *testing.T) {
	const clients, perClient = 3, 40
	var mu sync.Mutex
	sent := map[int][]int{}
	r, err := RunFixed(clients, perClient, func(c, j int) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		sent[c] = append(sent[c], j)
		return time.Nanosecond, nil
	})
	require.NoError(t, err)
	assert.Equal(t, clients*perClient, r.Requests)
	require.Len(t, sent, clients)
	for c, js := range sent {
		require.Len(t, js, perClient, "client %d", c)
		for j, got := range js {
			assert.Equal(t, j, got, "client %d's request %d", c, j)
		}
	}

	errBad := errors.New("bad answer")
	_, err = RunFixed(clients, perClient, func(c, j int) (time.Duration, error) {
		if c == 1 && j == 7 {
			return 0, errBad
		}
		return 0, nil
	})
	require.ErrorIs(t, err, errBad)
	assert.EqualError(t, err, "client 1, request 7: bad answer")
}

func TestSignedBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:        "0 B",
		1023:     "1023 B",
		-1023:    "-1023 B",
		1024:     "1.0 KiB (1024 B)",
		-3 << 20: "-3.0 MiB (-3145728 B)",
	} {
		assert.Equal(t, want, SignedBytes(n), "SignedBytes(%d)", n)
	}
}
