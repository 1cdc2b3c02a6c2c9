package cudarttest

import (
	"maps"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// DeviceReset is cudaDeviceReset: what the device's context holds goes, as
// in CUDA: its queued work, unrun, and its sticky error; its device, managed
// and stream-ordered memory; the pinned host memory allocated or registered
// on it (allocated memory is unmapped, so a slice kept from before faults on
// use); its streams, events, modules with their functions, captures, graphs
// and their instantiations, whose handles every call then refuses; its
// device-side malloc heap; and its limits, flags and release threshold, back
// to their defaults. Virtual memory is the process's, not the context's, and
// stays: physical memory from MemCreate, its mappings and their access,
// and address reservations (measured on an H100 with CUDA 13.0: unmap,
// release and address free all succeed after the reset, and the memory comes
// back at release). DeviceResets counts the resets.
//
// A reset that follows a fault CUDA documents as fatal to the process
// (every code FailAsync takes, and a kernel's illegal access) succeeds and
// frees the same, but leaves the device lost, as on a GPU: from then on every
// call that needs its context returns cudaErrorDevicesUnavailable (46),
// DeviceReset included, and so do the calls that name no device but need a
// context (FreeHost, and the virtual memory calls other than
// MemGetAllocationGranularity and MemCreate, which name theirs). Calls that
// need no context keep working: DeviceCount, RuntimeVersion, DriverVersion,
// DeviceCanAccessPeer, and the fake's own methods (DeviceResets, Live,
// CheckLeaks, ...). Only a new Fake, the fake's new process, recovers.
func (f *Fake) DeviceReset(device int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.enterOn(calls.DeviceReset, device)
	if x == nil {
		x = f.devs[device].lost
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
		if r.kind != kindHostAlias && r.kind != kindReservation && r.device == device {
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
	f.dropHandles(device)
	f.dropResources(device)
	old := f.devs[device]
	ds := &f.devs[device]
	*ds = freshDevice()
	for _, p := range f.phys {
		if p.device == device {
			ds.used += p.size
		}
	}
	// Every fault the fake makes sticky is one CUDA documents as fatal.
	if old.sticky != nil {
		ds.lost = fail(46, "device %d is lost: it was reset after the fatal fault %s (%d), and CUDA leaves such a device unusable until the process ends", device, cudart.NewError("", old.sticky.code).Name, int(old.sticky.code))
	}
	f.resets[device].Add(1)
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
	if device < 0 || device >= len(f.resets) {
		return 0
	}
	return f.resets[device].Load()
}
