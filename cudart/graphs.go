package cudart

import "github.com/cudapool/cudapool/cudart/internal/calls"

// StreamBeginCapture is cudaStreamBeginCapture of s in mode: work issued to
// s is recorded into a graph, not run, until StreamEndCapture. The legacy
// default stream cannot capture.
//
// While s captures, CUDA refuses a call that would synchronise with it, and
// invalidates the capture. Measured with CUDA 13.0 on an H100:
// StreamSynchronize(s) and DeviceSynchronize fail with
// cudaErrorStreamCaptureUnsupported, a synchronous Memcpy (on the legacy
// default stream) with cudaErrorStreamCaptureImplicit, EventSynchronize of
// an event recorded in the capture with cudaErrorInvalidValue (EventQuery of
// it with cudaErrorCapturedEvent). StreamEndCapture then fails with
// cudaErrorStreamCaptureInvalidated, returns no graph and ends the capture,
// and s runs work again as before.
func (l *library) StreamBeginCapture(device int, s Stream, mode CaptureMode) error {
	if r := l.callOn(s, calls.StreamBeginCapture, device, uintptr(s), cint(mode)); r.code != 0 {
		return l.fail(calls.StreamBeginCapture, r, "(stream 0x%x, %s) on device %d", uintptr(s), mode, device)
	}
	return nil
}

// StreamEndCapture is cudaStreamEndCapture: the graph of the work s
// recorded since StreamBeginCapture. Destroy it with GraphDestroy.
func (l *library) StreamEndCapture(device int, s Stream) (Graph, error) {
	r := l.call(calls.StreamEndCapture, device, uintptr(s))
	if r.code != 0 {
		return 0, l.fail(calls.StreamEndCapture, r, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	return Graph(r.a), nil
}

// GraphInstantiate is cudaGraphInstantiate of g with no flags. The graph
// may be destroyed after; the GraphExec keeps its own copy of the work.
func (l *library) GraphInstantiate(device int, g Graph) (GraphExec, error) {
	r := l.call(calls.GraphInstantiate, device, uintptr(g), 0)
	if r.code != 0 {
		return 0, l.fail(calls.GraphInstantiate, r, "(graph 0x%x) on device %d", uintptr(g), device)
	}
	return GraphExec(r.a), nil
}

// GraphLaunch is cudaGraphLaunch of x on stream s: the recorded work runs
// again, in its order, on s.
func (l *library) GraphLaunch(device int, x GraphExec, s Stream) error {
	if r := l.callOn(s, calls.GraphLaunch, device, uintptr(x), uintptr(s)); r.code != 0 {
		return l.fail(calls.GraphLaunch, r, "(graph exec 0x%x, stream 0x%x) on device %d", uintptr(x), uintptr(s), device)
	}
	return nil
}

// GraphExecDestroy is cudaGraphExecDestroy.
func (l *library) GraphExecDestroy(device int, x GraphExec) error {
	return l.onHandle(calls.GraphExecDestroy, device, uintptr(x), "graph exec")
}

// GraphDestroy is cudaGraphDestroy.
func (l *library) GraphDestroy(device int, g Graph) error {
	return l.onHandle(calls.GraphDestroy, device, uintptr(g), "graph")
}

// GraphNodes is cudaGraphGetNodes of g, called twice: for the number of
// nodes, then for the nodes. Their order is CUDA's, which its documentation
// leaves unspecified.
func (l *library) GraphNodes(device int, g Graph) ([]GraphNode, error) {
	if l.unusable() {
		return nil, closedError(calls.GraphGetNodes)
	}
	// CUDA reads the count as the room it may fill, and writes the count.
	n := new(uint64)
	if r := l.callMem(calls.GraphGetNodes, device, [2]Mem{{}, structMem(n)}, uintptr(g)); r.code != 0 {
		return nil, l.fail(calls.GraphGetNodes, r, "(graph 0x%x, count) on device %d", uintptr(g), device)
	}
	if *n == 0 {
		return nil, nil
	}
	nodes := make([]GraphNode, *n)
	if r := l.callMem(calls.GraphGetNodes, device, [2]Mem{sliceMem(nodes), structMem(n)}, uintptr(g)); r.code != 0 {
		return nil, l.fail(calls.GraphGetNodes, r, "(graph 0x%x, %d nodes) on device %d", uintptr(g), len(nodes), device)
	}
	return nodes[:min(*n, uint64(len(nodes)))], nil
}

// GraphNodeType is cudaGraphNodeGetType of n.
func (l *library) GraphNodeType(device int, n GraphNode) (GraphNodeType, error) {
	r := l.call(calls.GraphNodeGetType, device, uintptr(n))
	if r.code != 0 {
		return 0, l.fail(calls.GraphNodeGetType, r, "(node 0x%x) on device %d", uintptr(n), device)
	}
	return GraphNodeType(int32(r.a)), nil
}
