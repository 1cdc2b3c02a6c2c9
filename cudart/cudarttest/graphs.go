package cudarttest

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// captureState is the fake's stream captures, graphs and their
// instantiations. Capture records each piece of work issued to the stream
// (kernel launches, async copies, event records and waits, graph launches)
// as the closure that would have run it; a graph launch replays them in
// order on its stream. Closures read memory when they run, so a replay sees
// the memory as it is then, as a CUDA graph does.
type captureState struct {
	captures map[cudart.Stream]*capture
	graphs   map[cudart.Graph]*recorded
	execs    map[cudart.GraphExec]*recorded
	nodes    map[cudart.GraphNode]graphNode
	next     uintptr // the last handle given out, graphs and execs alike
}

// capture is one stream capture in progress.
type capture struct {
	device int
	mode   cudart.CaptureMode
	work   []step
	// invalid is why the capture was invalidated: its end then fails.
	invalid string
	mem     *graphMem // what MallocAsync allocated in it
	// serials are the Work.Serial of the library work it holds.
	serials map[uintptr]bool
}

// mark records a node of typ that runs nothing, for call: the nodes a
// library's work has around its kernel (Work.Scratch, Work.Serial).
func (cp *capture) mark(call calls.Call, typ cudart.GraphNodeType) {
	cp.work = append(cp.work, step{call: call, task: task{op: func() *failure { return nil }}, node: typ})
}

// step is one piece of recorded work.
type step struct {
	task
	call calls.Call
	node cudart.GraphNodeType // the type of its node in the graph, or noNode
}

// recorded is the work of a graph or of its instantiation.
type recorded struct {
	ownedBy
	work  []step
	nodes []cudart.GraphNode // a graph's, one per step with a node
	mem   *graphMem
}

// record appends t to the capture of s, with the node CUDA records for
// call, and reports whether s captures.
func (c *captureState) record(s cudart.Stream, call calls.Call, t task) bool {
	cp := c.captures[s]
	if cp == nil {
		return false
	}
	cp.work = append(cp.work, step{task: t, call: call, node: nodeOf(call)})
	return true
}

// handle is a new graph or exec handle; handles are never reused.
func (c *captureState) handle() uintptr {
	c.next += 0x10
	return 0x6_0000 + c.next
}

// captureBlocksSync refuses a synchronisation with a capturing stream, and
// invalidates the capture as CUDA does: synchronising the capturing stream
// itself is cudaErrorStreamCaptureUnsupported; an operation on the legacy
// default stream, which waits for every blocking stream of the device, is
// cudaErrorStreamCaptureImplicit while one of them captures.
func (f *Fake) captureBlocksSync(dev int, s cudart.Stream) *failure {
	if cp := f.graph.captures[s]; cp != nil {
		cp.invalid = "the capturing stream was synchronised"
		return fail(900, "stream 0x%x is capturing; the capture is invalidated", uintptr(s))
	}
	if s != 0 && s != streamLegacyHandle {
		return nil
	}
	for cs, cp := range f.graph.captures {
		if f.capturesLive(cs) && cp.device == dev {
			cp.invalid = "the legacy default stream was synchronised with it"
			return fail(906, "stream 0x%x is capturing; the capture is invalidated", uintptr(cs))
		}
	}
	return nil
}

// captureForbidsUnsafe refuses call, a call CUDA deems unsafe during a
// capture (cudaMalloc, cudaGraphInstantiate of another graph: the graphs of
// one thread's captures on several devices are instantiated once every
// capture has ended), while a global or thread-local capture is under
// way on any device, with cudaErrorStreamCaptureUnsupported, and
// invalidates that capture; a relaxed capture allows it. The fake cannot see
// threads, so a thread-local capture forbids it on every thread.
func (f *Fake) captureForbidsUnsafe(call calls.Call) *failure {
	for cs, cp := range f.graph.captures {
		if f.capturesLive(cs) && cp.mode != cudart.CaptureModeRelaxed {
			cp.invalid = call.String() + " was called"
			return fail(900, "stream 0x%x captures in %s; the capture is invalidated", uintptr(cs), cp.mode)
		}
	}
	return nil
}

// captureBlocksDeviceSync refuses cudaDeviceSynchronize while a stream of
// the device captures, with cudaErrorStreamCaptureUnsupported, and
// invalidates the capture.
func (f *Fake) captureBlocksDeviceSync(dev int) *failure {
	for cs, cp := range f.graph.captures {
		if f.capturesLive(cs) && cp.device == dev {
			cp.invalid = "the device was synchronised"
			return fail(900, "stream 0x%x is capturing; the capture is invalidated", uintptr(cs))
		}
	}
	return nil
}

// capturesLive reports whether a capture's stream, cs, is live: a capture
// outlives its stream only in the map of captures, and the handle of a
// destroyed stream is never live again. cudaStreamPerThread is always live,
// and a blocking stream, so the legacy default stream waits for it as for a
// created one.
func (f *Fake) capturesLive(cs cudart.Stream) bool {
	_, live := f.streams[cs]
	return live || cs == streamPerThreadHandle
}

// StreamBeginCapture is cudaStreamBeginCapture: work issued to s is
// recorded, not run, until StreamEndCapture. The legacy default stream and
// a stream already capturing cannot begin a capture. The fake cannot see OS
// threads, so it does not check CUDA's rule that a global or thread-local
// capture ends on the thread that began it.
func (f *Fake) StreamBeginCapture(device int, s cudart.Stream, mode cudart.CaptureMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, x := f.streamCall(calls.StreamBeginCapture, device, s)
	switch {
	case x != nil:
	case mode < cudart.CaptureModeGlobal || mode > cudart.CaptureModeRelaxed:
		x = invalid("unknown capture mode %d", int(mode))
	case s == 0 || s == streamLegacyHandle:
		x = fail(900, "the legacy default stream cannot capture")
	case f.graph.captures[s] != nil:
		x = fail(900, "stream 0x%x is capturing already", uintptr(s))
	}
	if x != nil {
		return x.err(calls.StreamBeginCapture, "(stream 0x%x, %s) on device %d", uintptr(s), mode, device)
	}
	if f.graph.captures == nil {
		f.graph.captures = make(map[cudart.Stream]*capture)
	}
	f.graph.captures[s] = &capture{device: device, mode: mode}
	return nil
}

// StreamEndCapture is cudaStreamEndCapture: the graph of the work recorded
// on s. A capture invalidated by a forbidden call ends too, with
// cudaErrorStreamCaptureInvalidated and no graph; s then runs work again.
func (f *Fake) StreamEndCapture(device int, s cudart.Stream) (cudart.Graph, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, x := f.streamCall(calls.StreamEndCapture, device, s)
	cp := f.graph.captures[s]
	if x == nil && cp == nil {
		x = fail(903, "stream 0x%x is not capturing", uintptr(s))
	}
	if x == nil && cp.device != device {
		x = fail(400, "stream 0x%x captures on device %d", uintptr(s), cp.device)
	}
	if x == nil {
		delete(f.graph.captures, s)
		if cp.invalid != "" {
			x = fail(901, "%s", cp.invalid)
		}
		x = f.settleCaptureMem(cp, x)
	}
	if x != nil {
		return 0, x.err(calls.StreamEndCapture, "(stream 0x%x) on device %d", uintptr(s), device)
	}
	if f.graph.graphs == nil {
		f.graph.graphs = make(map[cudart.Graph]*recorded)
	}
	g := cudart.Graph(f.graph.handle())
	f.graph.graphs[g] = &recorded{ownedBy: ownedBy{device, f.birth()}, work: cp.work, nodes: f.graph.addNodes(g, cp.work), mem: cp.mem}
	return g, nil
}

// GraphInstantiate is cudaGraphInstantiate: an executable copy of g's work,
// which outlives g.
func (f *Fake) GraphInstantiate(device int, g cudart.Graph) (cudart.GraphExec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gr, x := live(f, calls.GraphInstantiate, device, f.graph.graphs, g, "graph")
	if x == nil {
		x = f.captureForbidsUnsafe(calls.GraphInstantiate)
	}
	if x != nil {
		return 0, x.err(calls.GraphInstantiate, "(graph 0x%x) on device %d", uintptr(g), device)
	}
	if f.graph.execs == nil {
		f.graph.execs = make(map[cudart.GraphExec]*recorded)
	}
	e := cudart.GraphExec(f.graph.handle())
	f.graph.execs[e] = &recorded{ownedBy: ownedBy{device, f.birth()}, work: append([]step(nil), gr.work...), mem: gr.mem.hold()}
	return e, nil
}

// GraphLaunch is cudaGraphLaunch: the recorded work runs in order on s. A
// step that fails stops the replay with its failure.
func (f *Fake) GraphLaunch(device int, e cudart.GraphExec, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.GraphLaunch, device, s)
	ex := f.graph.execs[e]
	if x == nil {
		x = onDevice(ex, device, "graph exec 0x%x", uintptr(e))
	}
	if x == nil {
		_, x = f.enqueueTask(qdev, s, calls.GraphLaunch, replay(ex.work))
	}
	if x != nil {
		return x.err(calls.GraphLaunch, "(graph exec 0x%x, stream 0x%x) on device %d", uintptr(e), uintptr(s), device)
	}
	return nil
}

// replay is the task of a launch of work: each step in order, ready when
// every step is, holding what the steps hold.
func replay(work []step) task {
	t := task{op: func() *failure {
		for i, st := range work {
			if y := st.op(); y != nil {
				return fail(y.code, "step %d of the graph, %s: %s", i, st.call, y.why)
			}
		}
		return nil
	}}
	for _, st := range work {
		t.keys = append(t.keys, st.keys...)
	}
	t.ready = func(p *Progress) bool {
		for _, st := range work {
			if st.ready != nil && !st.ready(p.asking(st.task)) {
				return false
			}
		}
		return true
	}
	return t
}

// GraphExecDestroy is cudaGraphExecDestroy.
func (f *Fake) GraphExecDestroy(device int, e cudart.GraphExec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ex, err := destroy(f, calls.GraphExecDestroy, device, f.graph.execs, e, "graph exec")
	if err != nil {
		return err
	}
	f.dropGraphMem(ex.mem)
	return nil
}

// GraphDestroy is cudaGraphDestroy.
func (f *Fake) GraphDestroy(device int, g cudart.Graph) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	gr, err := destroy(f, calls.GraphDestroy, device, f.graph.graphs, g, "graph")
	if err != nil {
		return err
	}
	f.graph.dropNodes(gr.nodes)
	f.dropGraphMem(gr.mem)
	return nil
}

// ownedBy is the device a handle's object belongs to, and the call that
// made it (counted from NewFake), for leak reports.
type ownedBy struct{ device, seq int }

func (o ownedBy) owner() int { return o.device }

// live is the object of handle h in objs, and the first refusal of call c
// on device: f.check's, then onDevice's, naming the object what.
func live[H ~uintptr, T any, P interface {
	*T
	owner() int
}](f *Fake, c calls.Call, device int, objs map[H]P, h H, what string) (P, *failure) {
	p := objs[h]
	if x := f.check(c, device); x != nil {
		return p, x
	}
	return p, onDevice(p, device, "%s 0x%x", what, uintptr(h))
}

// destroy is live for a call that destroys h, which leaves objs when live:
// its error names the call, the handle and the device.
func destroy[H ~uintptr, T any, P interface {
	*T
	owner() int
}](f *Fake, c calls.Call, device int, objs map[H]P, h H, what string) (P, error) {
	p, x := live(f, c, device, objs, h, what)
	if x != nil {
		return p, x.err(c, "(%s 0x%x) on device %d", what, uintptr(h), device)
	}
	delete(objs, h)
	return p, nil
}

// onDevice refuses the object of a handle, p, when it is not live (nil) or
// belongs to another device than the call's: cudaErrorInvalidResourceHandle.
// format and args name the handle.
func onDevice[T any, P interface {
	*T
	owner() int
}](p P, device int, format string, args ...any) *failure {
	if p == nil {
		return fail(400, "%s is not live", fmt.Sprintf(format, args...))
	}
	if d := p.owner(); d != device {
		return fail(400, "%s belongs to device %d", fmt.Sprintf(format, args...), d)
	}
	return nil
}

// GraphNodes is cudaGraphGetNodes: the nodes of g, in the order of the work
// they stand for. The binding asks CUDA twice, for the count and then for
// the nodes, and the fake makes the same calls: one for a graph with no
// node. A null graph is cudaErrorInvalidValue.
func (f *Fake) GraphNodes(device int, g cudart.Graph) ([]cudart.GraphNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.GraphGetNodes, device)
	gr := f.graph.graphs[g]
	if x == nil && g == 0 {
		x = invalid("a null graph")
	}
	if x == nil {
		x = onDevice(gr, device, "graph 0x%x", uintptr(g))
	}
	if x == nil && len(gr.nodes) > 0 {
		x = f.enter(calls.GraphGetNodes)
	}
	if x != nil {
		return nil, x.err(calls.GraphGetNodes, "(graph 0x%x) on device %d", uintptr(g), device)
	}
	return slices.Clone(gr.nodes), nil
}

// GraphNodeType is cudaGraphNodeGetType: the type of node n. A null node is
// cudaErrorInvalidValue; so is a node of a destroyed graph, which CUDA
// leaves undefined.
func (f *Fake) GraphNodeType(device int, n cudart.GraphNode) (cudart.GraphNodeType, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.GraphNodeGetType, device)
	nd, ok := f.graph.nodes[n]
	gr := f.graph.graphs[nd.graph]
	switch {
	case x != nil:
	case n == 0:
		x = invalid("a null node")
	case !ok || gr == nil:
		x = invalid("node 0x%x is not a node of a live graph", uintptr(n))
	default:
		x = onDevice(gr, device, "graph 0x%x of node 0x%x", uintptr(nd.graph), uintptr(n))
	}
	if x != nil {
		return 0, x.err(calls.GraphNodeGetType, "(node 0x%x) on device %d", uintptr(n), device)
	}
	return nd.typ, nil
}
