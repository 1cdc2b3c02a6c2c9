package pool_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestAcquireGroupProperties: goroutines mix AcquireGroup, MultiSlots'
// Acquire and a device's own Acquire, some with a deadline, some queueing
// work before they release: no slot is held twice, every group holds one
// index on every device, every call without a deadline is served, and at
// the end nothing is held or waiting and every slot is free.
func TestAcquireGroupProperties(t *testing.T) {
	seeds := uint64(24)
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		devs, n := 1+int(seed%4), 1+int(seed/4%3)
		t.Run(fmt.Sprintf("seed-%d-%d-devices-%d-slots", seed, devs, n), func(t *testing.T) {
			m, _, f := newMulti(t, devs, n)
			h := &holders{held: map[[2]int]bool{}}
			var wg sync.WaitGroup
			for w := range 12 {
				wg.Go(func() { mixedCalls(t, f, m, h, rand.New(rand.NewPCG(seed, uint64(w)))) })
			}
			done := make(chan struct{})
			go func() {
				wg.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("calls not served after 60 s: %+v", m.Stats())
			}
			st := m.Stats()
			assert.Zero(t, st.InUse+st.Waiting+st.WaitingGroups, "%+v", st)
			assert.Equal(t, devs*n, st.Ready+st.Draining, "%+v", st)
			var acquisitions, waits uint64
			for _, ps := range st.PerDevice {
				assert.Zero(t, ps.Waiting+ps.InUse, "%+v", ps)
				for _, p := range ps.Profiles {
					acquisitions += p.Acquisitions
					waits += p.Waits
				}
			}
			assert.Positive(t, waits, "calls waited for slots")
			h.mu.Lock()
			defer h.mu.Unlock()
			assert.Equal(t, h.served, acquisitions, "every slot handed out is counted once")
		})
	}
}

// holders are the slots held, by device and index, and how many were
// handed out.
type holders struct {
	mu     sync.Mutex
	held   map[[2]int]bool
	served uint64
}

func (h *holders) take(t *testing.T, sls ...pool.Slot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sl := range sls {
		k := [2]int{sl.Device(), sl.Index()}
		assert.False(t, h.held[k], "slot %v held twice", k)
		h.held[k] = true
		h.served++
	}
}

func (h *holders) give(sls ...pool.Slot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sl := range sls {
		h.held[[2]int{sl.Device(), sl.Index()}] = false
	}
}

// mixedCalls makes 40 random calls on m and releases what each got.
func mixedCalls(t *testing.T, f *cudarttest.Fake, m *pool.MultiSlots, h *holders, r *rand.Rand) {
	devs := m.Devices()
	for range 40 {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		deadline := r.IntN(4) == 0
		if deadline {
			ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(500))*time.Microsecond)
		}
		profile := []string{"b1", "b8"}[r.IntN(2)]
		var sls []pool.Slot
		var release func() error
		var err error
		switch r.IntN(3) {
		case 0:
			var g pool.SlotGroup
			if g, err = m.AcquireGroup(ctx, profile); err == nil {
				sls, release = g.Slots(), g.Release
				for i, sl := range sls {
					assert.Equal(t, g.Index(), sl.Index(), "member %d", i)
					assert.Equal(t, devs[i], sl.Device())
				}
			}
		case 1:
			var sl pool.Slot
			if sl, err = m.Acquire(ctx, profile); err == nil {
				sls, release = []pool.Slot{sl}, func() error { return m.Release(sl) }
			}
		default:
			var sl pool.Slot
			if sl, err = m.On(devs[r.IntN(len(devs))]).Acquire(ctx, profile); err == nil {
				sls, release = []pool.Slot{sl}, func() error { return m.Release(sl) }
			}
		}
		cancel()
		if err != nil {
			if !deadline || !assert.ErrorIs(t, err, context.DeadlineExceeded) {
				assert.NoError(t, err)
				return
			}
			continue
		}
		h.take(t, sls...)
		if r.IntN(3) == 0 {
			queueWork(t, f, sls[0])
		} else {
			runtime.Gosched()
		}
		h.give(sls...)
		if !assert.NoError(t, release()) {
			return
		}
	}
}
