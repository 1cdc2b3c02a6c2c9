package cudarttest

import (
	"maps"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/calls"
)

// DeviceReset is cudaDeviceReset: everything the device's context holds
// goes, as in CUDA: its queued work, unrun, and its sticky error; its device,
// managed and stream-ordered memory; the pinned host memory allocated or
// registered on it (allocated memory is unmapped, so a slice kept from
// before faults on use); its streams, events, modules with their functions,
// captures, graphs and their instantiations, whose handles every call then
// refuses; its physical memory, unmapped from every reservation; its
// device-side malloc heap; and its limits, flags and release threshold, back
// to their defaults. Address reservations are the process's and stay.
// DeviceResets counts the resets.
func (f *Fake) DeviceReset(device int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.enter(calls.DeviceReset)
	if x == nil {
		x = f.device(device)
	}
	if x == nil {
		x = f.reset(device)
	}
	if x != nil {
		return x.err(calls.DeviceReset, "(device %d)", device)
	}
	return nil
}

func (f *Fake) reset(device int) *failure {
	for _, r := range slices.Clone(f.regions) {
		switch {
		case r.kind == kindReservation:
			r.maps = slices.DeleteFunc(r.maps, func(m *mapping) bool { return m.phys.device == device })
		case r.kind != kindHostAlias && r.device == device:
			f.release(r)
		}
	}
	for _, h := range slices.Clone(f.hosts) {
		if h.device == device {
			if x := f.dropHost(h); x != nil {
				return x
			}
		}
	}
	for s, info := range f.streams {
		if info.device == device {
			delete(f.streams, s)
		}
	}
	for h, p := range f.phys {
		if p.device == device {
			delete(f.phys, h)
		}
	}
	f.dropHandles(device)
	resets := f.devs[device].resets
	f.devs[device] = freshDevice()
	f.devs[device].resets = resets + 1
	return nil
}

// dropHandles forgets the events, modules, functions, captures, graphs and
// graph execs of device, and its malloc heap.
func (f *Fake) dropHandles(device int) {
	dropOwned(f.evs.live, device)
	dropOwned(f.kern.modules, device)
	maps.DeleteFunc(f.kern.functions, func(_ cudart.Function, k *fakeFunction) bool {
		_, ok := f.kern.modules[k.module]
		return !ok
	})
	delete(f.kern.heapUsed, device)
	delete(f.kern.heapFixed, device)
	maps.DeleteFunc(f.graph.captures, func(_ cudart.Stream, c *capture) bool { return c.device == device })
	dropOwned(f.graph.graphs, device)
	dropOwned(f.graph.execs, device)
}

// dropOwned deletes the objects of device from m.
func dropOwned[K comparable, V interface{ owner() int }](m map[K]V, device int) {
	maps.DeleteFunc(m, func(_ K, v V) bool { return v.owner() == device })
}

// DeviceResets is how many times DeviceReset succeeded on device; 0 for a
// device the fake does not have.
func (f *Fake) DeviceResets(device int) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.device(device) != nil {
		return 0
	}
	return f.devs[device].resets
}
