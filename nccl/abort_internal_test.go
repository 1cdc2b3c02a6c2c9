package nccl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// stuckAbort is a backend whose ncclCommAbort waits until release is
// closed, as NCCL's does while it waits for a peer that died.
type stuckAbort struct {
	ncclabi.Backend
	release chan struct{}
}

func (b stuckAbort) Do(fs []ncclabi.Frame) (int, error) {
	if len(fs) > 0 && fs[0].Call == ncclabi.CommAbort {
		<-b.release
	}
	return b.Backend.Do(fs)
}

// An abort that NCCL does not end returns within AbortWait with
// ErrTimeout, the communicator closed, and a group that timed out aborts
// its communicators at once, so that its bound is its timeout plus one
// AbortWait however many it waited for.
func TestAbortIsBoundedWhenNCCLsIsNot(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	l, err := Open(f)
	require.NoError(t, err)
	comms, err := l.InitAll([]int{0, 1}, WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	stuck := stuckAbort{l.be, make(chan struct{})}
	l.be = stuck

	start := time.Now()
	err = comms[0].Abort()
	took := time.Since(start)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "ncclCommAbort on "+comms[0].String()+" had not returned after 2s")
	assert.GreaterOrEqual(t, took, AbortWait)
	assert.Less(t, took, AbortWait+time.Second)
	require.ErrorIs(t, comms[0].AllReduce(0, 0, 0, Float32, Sum, 0), ErrClosed, "closed though NCCL's abort goes on")
	require.NoError(t, comms[0].Destroy(), "closed")

	// comms[1] times out alone (its peer is gone) and aborts, stuck too.
	start = time.Now()
	err = comms[1].AllReduce(0, 0, 0, Float32, Sum, 0)
	took = time.Since(start)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Less(t, took, 50*time.Millisecond+AbortWait+time.Second)
	close(stuck.release)
	require.Eventually(t, func() bool { return f.Live().LibraryHandles == 0 }, time.Second, time.Millisecond, "the aborts ended in the background")
}
