package pool

import (
	"encoding/json"
	"time"
)

// SlotsStats describes the slots: their memory, their state, and what each
// profile and each slot has served.
type SlotsStats struct {
	Slots    int // slots in all
	InUse    int // held by a request
	Ready    int // free, their released work known finished
	Draining int // released, their work maybe still queued
	Waiting  int // Acquire calls waiting for a slot

	// SlotDevice and SlotHost are one slot's bytes in each arena: the
	// largest profile's. SharedDevice and SharedHost are the shared
	// buffers'. Device and Host are what the layout takes in each arena:
	// shared + Slots × slot.
	SlotDevice, SlotHost     uint64
	SharedDevice, SharedHost uint64
	Device, Host             uint64

	Profiles []ProfileStats // in the order of SlotLayout.Profiles
	PerSlot  []SlotStats    // by slot index
	Pool     Stats          // the pool the slots are placed in
	Closed   bool
}

// ProfileStats is what a profile uses of a slot and what it has served.
type ProfileStats struct {
	Name string
	// Device and Host are the bytes of a slot the profile's plan uses;
	// Requested the sum of its buffers' sizes; Unshared what its buffers
	// would take if none shared bytes.
	Device, Host                   uint64
	DeviceRequested, HostRequested uint64
	DeviceUnshared, HostUnshared   uint64
	Buffers                        int

	InUse        int           // slots held with this profile now
	Acquisitions uint64        // Acquire calls that returned a slot
	Waits        uint64        // ...of which waited for one
	WaitTime     time.Duration // their time waiting, in all
}

// SlotStats is what one slot has served.
type SlotStats struct {
	Index        int
	InUse        bool
	Profile      string // the profile it is held with; "" when free
	Acquisitions uint64
	Waits        uint64        // acquisitions that waited for a slot
	WaitTime     time.Duration // their time waiting, in all
}

// Stats returns a snapshot. A nil or zero Slots reports itself closed.
func (s *Slots) Stats() SlotsStats {
	if s.valid() != nil {
		return SlotsStats{Closed: true}
	}
	ps := s.p.Stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SlotsStats{
		Slots: len(s.slots), Ready: len(s.ready), Draining: s.draining.n + s.asking, Waiting: len(s.waiters),
		SlotDevice: s.stride[Device], SlotHost: s.stride[Host],
		SharedDevice: s.sharedBytes[Device], SharedHost: s.sharedBytes[Host],
		Device: ps.Device.Used, Host: ps.Host.Used,
		Pool: ps, Closed: s.closed,
		Profiles: make([]ProfileStats, len(s.profiles)),
		PerSlot:  make([]SlotStats, len(s.slots)),
	}
	for i, p := range s.profiles {
		st.Profiles[i] = ProfileStats{
			Name: p.name, Device: p.end[Device], Host: p.end[Host],
			DeviceRequested: p.requested[Device], HostRequested: p.requested[Host],
			DeviceUnshared: p.unshared[Device], HostUnshared: p.unshared[Host],
			Buffers: len(p.bufs), InUse: p.inUse,
			Acquisitions: p.acquisitions, Waits: p.waits, WaitTime: time.Duration(p.waited.Load()),
		}
	}
	for i := range s.slots {
		sl := &s.slots[i]
		ss := SlotStats{Index: i, InUse: sl.held != nil, Acquisitions: sl.acquisitions, Waits: sl.waits, WaitTime: time.Duration(sl.waited.Load())}
		if sl.held != nil {
			ss.Profile = sl.held.name
			st.InUse++
		}
		st.PerSlot[i] = ss
	}
	return st
}

// Var is the slots' Stats as an expvar.Var, read afresh at every request,
// so that a server publishes them at /debug/vars in one line:
//
//	expvar.Publish("slots", slots.Var())
func (s *Slots) Var() StatsVar { return StatsVar{s} }

// StatsVar is what Var returns: an expvar.Var (String) and a json.Marshaler,
// both the Stats of its Slots as JSON at the time of the call. Package pool
// does not import expvar, whose init serves the process's command line and
// memory statistics on http.DefaultServeMux: a program publishes only what
// it chooses to.
type StatsVar struct{ s *Slots }

// MarshalJSON is the Stats of v's Slots now.
func (v StatsVar) MarshalJSON() ([]byte, error) { return json.Marshal(v.s.Stats()) }

// String is MarshalJSON's JSON, or "null" if it fails, as expvar.Func does.
func (v StatsVar) String() string {
	b, err := v.MarshalJSON()
	if err != nil {
		return "null"
	}
	return string(b)
}
