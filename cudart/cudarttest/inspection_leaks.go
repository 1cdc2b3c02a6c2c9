package cudarttest

import "fmt"

// handleLeaks reports each live module, event, graph and graph exec to add,
// with the call that made it, for CheckLeaks.
func (f *Fake) handleLeaks(add func(seq int, text string)) {
	report := func(what string, h uintptr, o ownedBy, call string) {
		add(o.seq, fmt.Sprintf("%s 0x%x on device %d from %s (call #%d)", what, h, o.device, call, o.seq))
	}
	for m, mod := range f.kern.modules {
		report("module", uintptr(m), mod.ownedBy, "cuModuleLoadDataEx")
	}
	for e, ev := range f.evs.live {
		report("event", uintptr(e), ev.ownedBy, "cudaEventCreate")
	}
	for g, r := range f.graph.graphs {
		report("graph", uintptr(g), r.ownedBy, "cudaStreamEndCapture")
	}
	for x, r := range f.graph.execs {
		report("graph exec", uintptr(x), r.ownedBy, "cudaGraphInstantiate")
	}
}
