package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// contenders is how many goroutines hand the slots about in the hand-off
// measurement, as many as the load generator's clients by default.
const contenders = 8

// answeredAtOnce answers the stream query of Release at once: what is left
// of a hand-off is the Slots' own host time.
type answeredAtOnce struct{ cudart.Full }

func (answeredAtOnce) StreamQuery(int, cudart.Stream) (bool, error) { return true, nil }

// handoffs measures the hand-off alone, on 1 and 4 slots: contenders
// goroutines Acquire and Release a slot with nothing between, count times
// in all; with Release's stream query made on rt and answered at once; and
// the same hand-off of as many items through a buffered channel used as a
// semaphore. It prints the time a hand-off, the median of three runs.
func handoffs(rt cudart.Full, count int, stdout, stderr io.Writer) error {
	type row struct {
		n                      int
		slots, atOnce, channel float64 // ns a hand-off
	}
	var rows []row
	for _, n := range []int{1, 4} {
		fmt.Fprintf(stderr, "serve: hand-off, %d slots: 3 × %d hand-offs, three ways...\n", n, count)
		r := row{n: n}
		var err error
		if r.slots, err = slotsHandoff(rt, n, count); err != nil {
			return err
		}
		if r.atOnce, err = slotsHandoff(answeredAtOnce{rt}, n, count); err != nil {
			return err
		}
		free := make(chan int, n)
		for i := range n {
			free <- i
		}
		r.channel, _ = median3(count, func() error {
			free <- <-free
			return nil
		})
		rows = append(rows, r)
	}
	fmt.Fprintf(stdout, "\nhand-off alone: Acquire + Release by %d goroutines at once, nothing between, ns a hand-off (median of 3 runs of %d):\n", contenders, count)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "slots\tSlots\tSlots, query answered at once\tbuffered channel\tSlots / channel\tat once / channel\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.2fx\t%.2fx\t\n", r.n, r.slots, r.atOnce, r.channel, r.slots/r.channel, r.atOnce/r.channel)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "target: the hand-off within 1.5x of the channel semaphore (Release's one CUDA call is in \"Slots\" only)")
	return nil
}

// slotsHandoff is the hand-off time of n slots of a one-buffer layout on rt.
func slotsHandoff(rt cudart.Runtime, n, count int) (_ float64, err error) {
	pr := pool.NewProfile("handoff")
	if _, err := pr.Device(256, pool.Name("x")); err != nil {
		return 0, err
	}
	s, err := pool.NewSlots(rt, n, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ctx := context.Background()
	return median3(count, func() error {
		sl, err := s.Acquire(ctx, "handoff")
		if err != nil {
			return err
		}
		return s.Release(sl)
	})
}

// median3 runs count calls of handoff from contenders goroutines, three
// times, and is the median time a call, in nanoseconds.
func median3(count int, handoff func() error) (float64, error) {
	var runs []float64
	for range 3 {
		var wg sync.WaitGroup
		errs := make([]error, contenders)
		start := time.Now()
		for g := range contenders {
			calls := count / contenders
			if g < count%contenders {
				calls++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					if errs[g] = handoff(); errs[g] != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		runs = append(runs, float64(time.Since(start).Nanoseconds())/float64(count))
	}
	slices.Sort(runs)
	return runs[1], nil
}
