package pool_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
)

// contenders is how many goroutines hand the slots about in
// BenchmarkHandoff: the serve example's clients.
const contenders = 8

// BenchmarkHandoff is one Acquire and Release by each of 8 goroutines at
// once, over 1 and 4 slots, holding each slot for no time: the hand-off
// alone, under contention. ns/op is the wall time over all the hand-offs.
// It is set against the same hand-off of n items made with a buffered
// channel used as a semaphore (receive to take an item, send to give it
// back) and with a sync.Mutex over a free list (a sync.Cond to wait on).
// "Slots" makes Release's one CUDA call (a stream query) on the runtime
// cudarttest.Open gives, CUDA on a GPU host; "Slots-own-cost" has it
// answered at once, leaving the Slots' host time.
func BenchmarkHandoff(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("slots=%d/Slots", n), func(b *testing.B) {
			s, _ := newSlots(b, cudarttest.Open(b), n)
			contend(b, acquireRelease(s))
		})
		b.Run(fmt.Sprintf("slots=%d/Slots-own-cost", n), func(b *testing.B) {
			s, _ := newSlots(b, instantQuery{cudarttest.NewFakeT(b)}, n)
			contend(b, acquireRelease(s))
		})
		b.Run(fmt.Sprintf("slots=%d/channel", n), func(b *testing.B) {
			free := make(chan *int, n)
			for i := range n {
				free <- &i
			}
			contend(b, func() error {
				free <- <-free
				return nil
			})
		})
		b.Run(fmt.Sprintf("slots=%d/mutex", n), func(b *testing.B) {
			l := newMutexList(n)
			contend(b, func() error {
				l.put(l.take())
				return nil
			})
		})
	}
}

// acquireRelease is one hand-off of a slot of s.
func acquireRelease(s pooltest.SlotSource) func() error {
	ctx := context.Background()
	return func() error {
		sl, err := s.Acquire(ctx, "b1")
		if err != nil {
			return err
		}
		return s.Release(sl)
	}
}

// contend runs b.N calls of handoff, shared among contenders goroutines
// started together.
func contend(b *testing.B, handoff func() error) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range contenders {
		calls := b.N / contenders
		if g < b.N%contenders {
			calls++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				if err := handoff(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// mutexList hands out n items from a free list under a sync.Mutex; a taker
// finding it empty waits on a sync.Cond.
type mutexList struct {
	mu       sync.Mutex
	nonEmpty sync.Cond
	free     []*int // guarded by mu
}

func newMutexList(n int) *mutexList {
	l := &mutexList{}
	l.nonEmpty.L = &l.mu
	for i := range n {
		l.free = append(l.free, &i)
	}
	return l
}

func (l *mutexList) take() *int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.free) == 0 {
		l.nonEmpty.Wait()
	}
	it := l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	return it
}

func (l *mutexList) put(it *int) {
	l.mu.Lock()
	l.free = append(l.free, it)
	l.mu.Unlock()
	l.nonEmpty.Signal()
}
