package main

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/nccl"
)

// stallingRuntime is a rank's runtime whose StreamQuery on device never
// returns once armed, until released: a call into CUDA that never returns,
// as on a GPU whose peer was killed with its part of an all-reduce
// unposted (the collective's kernel waits for ever, and so may whatever
// asks about it). A request's wait for its devices polls (nccl's
// Library.Wait), on the fake as on CUDA, so the query is what stalls.
type stallingRuntime struct {
	cudart.Full
	device  int
	armed   atomic.Bool
	once    sync.Once
	stuckAt time.Time     // when the first call stalled
	stuck   chan struct{} // closed then
	release chan struct{}
}

func newStallingRuntime(device int) *stallingRuntime {
	return &stallingRuntime{device: device, stuck: make(chan struct{}), release: make(chan struct{})}
}

// Unwrap makes the bindings take it for the fake it wraps.
func (r *stallingRuntime) Unwrap() cudart.Runtime { return r.Full }

func (r *stallingRuntime) StreamQuery(device int, s cudart.Stream) (bool, error) {
	if device == r.device && r.armed.Load() {
		r.once.Do(func() {
			r.stuckAt = time.Now()
			close(r.stuck)
		})
		<-r.release
	}
	return r.Full.StreamQuery(device, s)
}

// armOnSoak writes to w, and arms r once the soak begins.
type armOnSoak struct {
	w io.Writer
	r *stallingRuntime
}

func (a armOnSoak) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("soak:")) {
		a.r.armed.Store(true)
	}
	return a.w.Write(p)
}

// TestAStuckRankExitsWithinItsBound: in a soak of a process-per-GPU pair,
// rank 0's stream stops finishing (its query never returns), as on
// 2×H200 after its peer's kill -9, where rank 0 printed nothing for 88 s.
// Rank 0 says so on stderr and fails within -timeout + AbortWait + 1 s of
// the stall; rank 1, left alone in its next all-reduce, fails too.
func TestAStuckRankExitsWithinItsBound(t *testing.T) {
	const timeout = time.Second
	stall := newStallingRuntime(0)
	var once sync.Once
	release := func() { once.Do(func() { close(stall.release) }) }
	t.Cleanup(release)
	// Without a bound of its own the stuck rank would never end: let it go
	// well past the bound, so that the test fails rather than hangs.
	go func() {
		<-stall.stuck
		time.Sleep(timeout + nccl.AbortWait + 5*time.Second)
		release()
	}()
	env := map[string]string{"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": freePort(t)}
	rs := runRanksOn(t, 2, []string{"-batches", "1", "-requests", "8", "-soak", "1000", "-launch", "eager", "-timeout", timeout.String()}, env,
		func(r int, c *config) {
			if r == 0 {
				stall.Full = c.rt.Full
				c.rt = &choose.Runtime{Full: stall, Description: c.rt.Description}
			}
		},
		func(r int, w io.Writer) io.Writer {
			if r == 0 {
				return armOnSoak{w, stall}
			}
			return w
		})
	select {
	case <-stall.stuck:
	default:
		require.Fail(t, "rank 0's stream never stalled", "rank 0: %s", rs.errs[0])
	}
	assert.Equal(t, 1, rs.codes[0], "rank 0: %s", rs.errs[0])
	assert.Contains(t, rs.errs[0], "tp rank 0: soak:")
	assert.Contains(t, rs.errs[0], "tp: a request failed, its communicators aborted: nccl: timed out: the request of group")
	assert.Contains(t, rs.errs[0], "still waiting for its devices after 1s")
	bound := timeout + nccl.AbortWait + time.Second
	// A second's slack for two loaded cores under the race detector.
	assert.Less(t, rs.ended[0].Sub(stall.stuckAt), bound+time.Second, "rank 0 ended %v after its stream stalled; bound %v", rs.ended[0].Sub(stall.stuckAt), bound)
	assert.Equal(t, 1, rs.codes[1], "rank 1: %s", rs.errs[1])
}
