package nccl_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/pool"
)

// Tensor-parallel requests on a MultiSlots: each takes slot k of every
// device (AcquireGroup), whose lent communicators are the ranks of comms[k],
// and sums its members' buffers with one group call. Requests on goroutines
// of their own, more than the groups, each get their own sum.
func TestSlotGroupsLendOneCommunicatorsRanks(t *testing.T) {
	const n, requests = 2, 6
	for _, devs := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d-devices", devs), func(t *testing.T) {
			cs := newCommSlots(t, devs, n)
			var wg sync.WaitGroup
			for r := range requests {
				wg.Go(func() { assert.NoError(t, cs.tensorParallel(r)) })
			}
			wg.Wait()
			assert.Zero(t, cs.m.Stats().InUse)
		})
	}
}

// tensorParallel runs request r on a group: each member's x is 100r plus
// its position, summed over the members, which it checks.
func (cs *commSlots) tensorParallel(r int) (err error) {
	g, err := cs.m.AcquireGroup(context.Background(), "request")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Release()) }()
	ops := make([]nccl.Op, g.Len())
	ptrs := make([]cudart.DevicePtr, g.Len())
	want := uint64(0)
	for i, sl := range g.Slots() {
		lent, err := pool.Attached[nccl.Lent](sl)
		if err != nil {
			return err
		}
		if c := cs.comms[g.Index()][i]; lent.Rank() != c.Rank() || lent.Device() != c.Device() {
			return fmt.Errorf("member %d lends rank %d on device %d, not comms[%d][%d]'s", i, lent.Rank(), lent.Device(), g.Index(), i)
		}
		if ptrs[i], err = sl.Ptr(cs.x); err != nil {
			return err
		}
		v := uint64(100*r + i)
		want += v
		if err := cs.f.Memcpy(sl.Device(), cudart.DeviceMem(ptrs[i], 8), cudart.HostMem(binary.LittleEndian.AppendUint64(nil, v)), cudart.HostToDevice); err != nil {
			return err
		}
		ops[i] = lent.AllReduceOp(ptrs[i], ptrs[i], 1, nccl.Int64, nccl.Sum)
	}
	if err := cs.lib.Group(ops...); err != nil {
		return err
	}
	for i, sl := range g.Slots() {
		s, err := sl.Stream()
		if err != nil {
			return err
		}
		b := make([]byte, 8)
		if err := errors.Join(cs.f.StreamSynchronize(sl.Device(), s), cs.f.Memcpy(sl.Device(), cudart.HostMem(b), cudart.DeviceMem(ptrs[i], 8), cudart.DeviceToHost)); err != nil {
			return err
		}
		if got := binary.LittleEndian.Uint64(b); got != want {
			return fmt.Errorf("request %d, member %d: sum %d, want %d", r, i, got, want)
		}
	}
	return nil
}
