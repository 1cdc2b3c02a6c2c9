package nccl

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// twoRanks is a communicator on each of a fake's two devices, made by
// InitAll.
func twoRanks(t *testing.T) (*Library, []*Comm) {
	t.Helper()
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	l, err := Open(f)
	require.NoError(t, err)
	comms, err := l.InitAll([]int{0, 1})
	require.NoError(t, err)
	return l, comms
}

// TestSplitNewcommIsNullUntilEveryRankSplit holds the fake to NCCL 2.28's
// non-blocking ncclCommSplit: newcomm is NULL when the call returns
// ncclInProgress and is written once every rank has split, as the parent
// leaves ncclInProgress (the binding read it at the return, and got nil on
// a GPU).
func TestSplitNewcommIsNullUntilEveryRankSplit(t *testing.T) {
	l, comms := twoRanks(t)
	split := func(c *Comm) []ncclabi.Frame {
		fs := []ncclabi.Frame{{Call: ncclabi.CommSplit, Device: c.device, Comm: c.raw, Out: 0xdead,
			Config: ncclabi.NewConfig(0, ncclabi.ConfigUndef)}}
		_, err := l.be.Do(fs)
		require.NoError(t, err)
		return fs
	}
	first := split(comms[0])
	require.Equal(t, ncclabi.InProgress, first[0].Result, "rank 0's split, rank 1 not split yet")
	assert.Zero(t, atomic.LoadUint64(&first[0].Out), "newcomm while the split is in progress")
	second := split(comms[1])
	require.Equal(t, ncclabi.Success, second[0].Result, "rank 1's split, the last")
	for r, fs := range [][]ncclabi.Frame{first, second} {
		raw := uintptr(atomic.LoadUint64(&fs[0].Out))
		require.NotZero(t, raw, "rank %d's newcomm once every rank split", r)
		kid := l.newComm(raw, r, -1, 0, commConfig{timeout: time.Second})
		require.NoError(t, kid.Destroy())
	}
	for _, c := range comms {
		require.NoError(t, c.Destroy())
	}
}

// TestSplitUndefinedBlockingIsRefused: a config given to ncclCommSplit is
// the new communicator's whole config, so an undefined blocking is NCCL's
// default, blocking, which the fake does not run.
func TestSplitUndefinedBlockingIsRefused(t *testing.T) {
	l, comms := twoRanks(t)
	fs := []ncclabi.Frame{{Call: ncclabi.CommSplit, Device: 0, Comm: comms[0].raw,
		Config: ncclabi.NewConfig(ncclabi.ConfigUndef, ncclabi.ConfigUndef)}}
	_, err := l.be.Do(fs)
	require.NoError(t, err)
	assert.Equal(t, ncclabi.InvalidUsage, fs[0].Result)
	for _, c := range comms {
		require.NoError(t, c.Destroy())
	}
}

// TestSplitAloneTimesOutAndAbortsItsNewComm: a rank that splits alone
// times out; NCCL hands out the failed new communicator once the parent's
// abort ends the split, and the binding aborts it (NewFakeT fails the test
// on a leak).
func TestSplitAloneTimesOutAndAbortsItsNewComm(t *testing.T) {
	_, comms := twoRanks(t)
	kid, err := comms[0].Split(0, 0, WithTimeout(20*time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	assert.Nil(t, kid)
	require.NoError(t, comms[0].Destroy(), "aborted by the timeout")
	require.NoError(t, comms[1].Destroy())
}
