package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// ByRows are the graphs of a backend that serves every request on one
// stream, or one stream a client: a graph a batch size, by its rows. Nil
// launches call by call.
type ByRows map[int]cudart.GraphExec

// EachBatch makes a graph for each of batches, once a size, with
// graph(rows). A failure destroys those made, the failed call's included
// where it returned one.
func EachBatch(rt cudart.Graphs, dev int, batches []int, graph func(rows int) (cudart.GraphExec, error)) (ByRows, error) {
	g := ByRows{}
	for _, rows := range batches {
		if g[rows] != 0 {
			continue
		}
		x, err := graph(rows)
		if x != 0 {
			g[rows] = x
		}
		if err != nil {
			return nil, errors.Join(err, g.Destroy(rt, dev))
		}
	}
	return g, nil
}

// For is the graph for rows; 0, launching call by call, where g is nil.
// A size g has no graph for is an error wrapping pool.ErrUnknownProfile.
func (g ByRows) For(rows int) (cudart.GraphExec, error) {
	x, ok := g[rows]
	if g != nil && !ok {
		return 0, fmt.Errorf("%w: no graph for %d rows", pool.ErrUnknownProfile, rows)
	}
	return x, nil
}

// Destroy destroys every graph of g, made on device dev.
func (g ByRows) Destroy(rt cudart.Graphs, dev int) error {
	var errs []error
	for _, x := range g {
		errs = append(errs, rt.GraphExecDestroy(dev, x))
	}
	return errors.Join(errs...)
}

// PerSlot are the graphs of a backend that serves from pool.Slots: a graph
// a slot and profile, [slot index][profile]. Nil launches call by call.
type PerSlot [][]cudart.GraphExec

// EachSlot makes, for each of profiles in turn, a graph on every slot of s
// with graph(sl, p), p the profile's index in profiles: holding all the
// slots at once makes Acquire hand out each of them. A failure destroys
// the graphs made, the failed call's included where it returned one.
func EachSlot(rt cudart.Graphs, dev int, s *pool.Slots, profiles []string, graph func(sl pool.Slot, p int) (cudart.GraphExec, error)) (PerSlot, error) {
	g := make(PerSlot, s.Len())
	for i := range g {
		g[i] = make([]cudart.GraphExec, len(profiles))
	}
	for p, name := range profiles {
		held := make([]pool.Slot, 0, len(g))
		var err error
		for range len(g) {
			var sl pool.Slot
			if sl, err = s.Acquire(context.Background(), name); err != nil {
				break
			}
			held = append(held, sl)
			if g[sl.Index()][p], err = graph(sl, p); err != nil {
				break
			}
		}
		for _, sl := range held {
			err = errors.Join(err, s.Release(sl))
		}
		if err != nil {
			return nil, errors.Join(err, g.Destroy(rt, dev))
		}
	}
	return g, nil
}

// Of is the graph of profile p on sl; 0, launching call by call, where g
// is nil.
func (g PerSlot) Of(sl pool.Slot, p int) cudart.GraphExec {
	if g == nil {
		return 0
	}
	return g[sl.Index()][p]
}

// Destroy destroys every graph of g, made on device dev.
func (g PerSlot) Destroy(rt cudart.Graphs, dev int) error {
	var errs []error
	for _, row := range g {
		for _, x := range row {
			if x != 0 {
				errs = append(errs, rt.GraphExecDestroy(dev, x))
			}
		}
	}
	return errors.Join(errs...)
}
