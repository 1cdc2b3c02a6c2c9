package capture

import (
	"errors"
	"runtime"

	"github.com/cudapool/cudapool/cudart"
)

// Stream is a stream to capture on, and its device.
type Stream struct {
	Device int
	Stream cudart.Stream
}

// Record captures what record queues on each of on into a graph a stream,
// in on's order. A failure, mid-capture included, still ends every capture
// begun, so that the streams stay usable, and leaves no graph.
func Record(rt cudart.Graphs, on []Stream, record func() error) (_ []cudart.Graph, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	began := 0
	for _, s := range on {
		if err = rt.StreamBeginCapture(s.Device, s.Stream, cudart.CaptureModeThreadLocal); err != nil {
			break
		}
		began++
	}
	if err == nil {
		err = record()
	}
	graphs := make([]cudart.Graph, began)
	for i, s := range on[:began] {
		g, e := rt.StreamEndCapture(s.Device, s.Stream)
		graphs[i], err = g, errors.Join(err, e)
	}
	if err != nil {
		return nil, errors.Join(err, destroyGraphs(rt, on, graphs))
	}
	return graphs, nil
}

// Instantiate is Record, then each graph's nodes counted and the graph
// instantiated; the graphs themselves are destroyed, their instances kept.
// A failure leaves no graph and no instance.
func Instantiate(rt cudart.Graphs, on []Stream, record func() error) (execs []cudart.GraphExec, counts []cudart.GraphNodeCounts, err error) {
	graphs, err := Record(rt, on, record)
	if err != nil {
		return nil, nil, err
	}
	for i, s := range on {
		var c cudart.GraphNodeCounts
		if c, err = cudart.CountGraphNodes(rt, s.Device, graphs[i]); err != nil {
			break
		}
		var x cudart.GraphExec
		if x, err = rt.GraphInstantiate(s.Device, graphs[i]); err != nil {
			break
		}
		execs, counts = append(execs, x), append(counts, c)
	}
	if err = errors.Join(err, destroyGraphs(rt, on, graphs)); err != nil {
		return nil, nil, errors.Join(err, Destroy(rt, on, execs))
	}
	return execs, counts, nil
}

// Destroy destroys each of execs, instantiated on on's streams in order.
func Destroy(rt cudart.Graphs, on []Stream, execs []cudart.GraphExec) error {
	return destroyEach(on, execs, rt.GraphExecDestroy)
}

// destroyGraphs destroys each of graphs, recorded on on's streams in order.
func destroyGraphs(rt cudart.Graphs, on []Stream, graphs []cudart.Graph) error {
	return destroyEach(on, graphs, rt.GraphDestroy)
}

// destroyEach calls destroy with each of xs but the zero ones (never made)
// and its stream's device.
func destroyEach[T comparable](on []Stream, xs []T, destroy func(device int, x T) error) error {
	var zero T
	var errs []error
	for i, x := range xs {
		if x != zero {
			errs = append(errs, destroy(on[i].Device, x))
		}
	}
	return errors.Join(errs...)
}
