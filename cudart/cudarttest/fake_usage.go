package cudarttest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// Usage counts what is live in a Fake, by kind. Bytes are the sizes asked
// for.
type Usage struct {
	DeviceAllocs int    // cudaMalloc
	DeviceBytes  uint64 //
	HostAllocs   int    // cudaMallocHost and cudaHostAlloc, mapped or not
	HostBytes    uint64 //
	// MappedHostAllocs are the HostAllocs made with HostAllocMapped.
	MappedHostAllocs int
	MappedHostBytes  uint64
	RegisteredAllocs int // cudaHostRegister
	RegisteredBytes  uint64
	ManagedAllocs    int // cudaMallocManaged
	ManagedBytes     uint64
	AsyncAllocs      int // cudaMallocAsync
	AsyncBytes       uint64
	// PhysAllocs are cuMemCreate handles whose memory is not yet freed: not
	// released, or released but still mapped.
	PhysAllocs    int
	PhysBytes     uint64
	Reservations  int // cuMemAddressReserve
	ReservedBytes uint64
	Mappings      int // cuMemMap
	MappedBytes   uint64
	Streams       int // cudaStreamCreate
	Modules       int // cuModuleLoadDataEx
	Events        int // cudaEventCreate
	Graphs        int // cudaStreamEndCapture
	GraphExecs    int // cudaGraphInstantiate
	MemHeaps      int // nvtxMemHeapRegister
}

// Empty reports whether nothing is live.
func (u Usage) Empty() bool { return u == Usage{} }

// ErrLeaked is what CheckLeaks wraps when something is still allocated.
var ErrLeaked = errors.New("cudarttest: CUDA resources still allocated")

// Live counts what is allocated now.
func (f *Fake) Live() Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var u Usage
	for _, r := range f.regions {
		switch r.kind {
		case kindDevice:
			u.DeviceAllocs++
			u.DeviceBytes += r.size
		case kindManaged:
			u.ManagedAllocs++
			u.ManagedBytes += r.size
		case kindAsync:
			u.AsyncAllocs++
			u.AsyncBytes += r.size
		case kindReservation:
			u.Reservations++
			u.ReservedBytes += r.size
			for _, m := range r.maps {
				u.Mappings++
				u.MappedBytes += m.size
			}
		}
	}
	for _, h := range f.hosts {
		n := uint64(len(h.b))
		switch {
		case h.registered:
			u.RegisteredAllocs++
			u.RegisteredBytes += n
		case h.alias != nil:
			u.MappedHostAllocs++
			u.MappedHostBytes += n
			fallthrough
		default:
			u.HostAllocs++
			u.HostBytes += n
		}
	}
	for _, p := range f.phys {
		u.PhysAllocs++
		u.PhysBytes += p.size
	}
	u.Streams = len(f.streams)
	u.Modules, u.Events = len(f.kern.modules), len(f.evs.live)
	u.Graphs, u.GraphExecs = len(f.graph.graphs), len(f.graph.execs)
	u.MemHeaps = len(f.annot.heaps)
	return u
}

// CheckLeaks returns nil when nothing is allocated, and otherwise an error
// wrapping ErrLeaked that lists every live allocation, stream and handle:
// its kind, address, size and the call that made it, in the order they were
// made.
func (f *Fake) CheckLeaks() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	type leak struct {
		seq  int
		text string
	}
	var leaks []leak
	for _, r := range f.regions {
		switch r.kind {
		case kindHostAlias:
			continue
		case kindReservation:
			for _, m := range r.maps {
				leaks = append(leaks, leak{m.seq, m.describe()})
			}
		}
		leaks = append(leaks, leak{r.seq, r.describe()})
	}
	for _, h := range f.hosts {
		leaks = append(leaks, leak{h.seq, h.describe()})
	}
	for _, p := range f.phys {
		leaks = append(leaks, leak{p.seq, p.describe()})
	}
	for s, info := range f.streams {
		leaks = append(leaks, leak{info.seq, fmt.Sprintf("stream 0x%x on device %d from cudaStreamCreate (call #%d)", uintptr(s), info.device, info.seq)})
	}
	f.handleLeaks(func(seq int, text string) { leaks = append(leaks, leak{seq, text}) })
	for _, h := range f.annot.heaps {
		leaks = append(leaks, leak{h.seq, fmt.Sprintf("memory heap %q at %s (%s) from nvtxMemHeapRegister (after call #%d)", h.name, h.base, bytesize.Format(h.size), h.seq)})
	}
	if len(leaks) == 0 {
		return nil
	}
	slices.SortFunc(leaks, func(a, b leak) int { return a.seq - b.seq })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d still live:", len(leaks))
	for _, l := range leaks {
		sb.WriteString("\n\t")
		sb.WriteString(l.text)
	}
	return fmt.Errorf("%w: %s", ErrLeaked, sb.String())
}
