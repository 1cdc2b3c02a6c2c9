package cudarttest

import (
	"slices"

	"github.com/cudapool/cudapool/internal/calls"
)

// DeviceReset is cudaDeviceReset: everything the device's context holds
// goes, as in CUDA: its queued work, unrun, and its sticky error; its device,
// managed and stream-ordered memory; the pinned host memory allocated or
// registered on it (allocated memory is unmapped, so a slice kept from
// before faults on use); its streams; its physical memory, unmapped from
// every reservation; and its limits, flags and release threshold, back to
// their defaults. Address reservations are the process's and stay.
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
	f.devs[device] = freshDevice()
	return nil
}
