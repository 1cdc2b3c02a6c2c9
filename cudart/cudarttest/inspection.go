package cudarttest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart"
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
	// LibraryHandles are the handles libraries' fakes made through the
	// Library hook (Attach): cuBLAS handles (cublasCreate).
	LibraryHandles int
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
	u.LibraryHandles = f.libraryHandles()
	return u
}

// CheckLeaks returns nil when nothing is allocated, and otherwise an error
// wrapping ErrLeaked that lists every live allocation, stream and handle:
// its kind, address, size and the call that made it, in the order they were
// made. Memory under a registered memory heap is listed under the heap's
// name, since the heap says whose it is: a pool's arena, say, when the pool
// was never closed. On a fake from NewFakeT each entry also says where it
// was made: the function of this module that made it (pool.New) and the
// first frame outside the module's library that called it.
func (f *Fake) CheckLeaks() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	type leak struct {
		seq    int
		text   string
		origin string
		lo, hi uint64 // the memory it holds; empty for handles
	}
	var leaks []leak
	for _, r := range f.regions {
		switch r.kind {
		case kindHostAlias:
			continue
		case kindReservation:
			for _, m := range r.maps {
				leaks = append(leaks, leak{seq: m.seq, text: m.describe()})
			}
		}
		leaks = append(leaks, leak{seq: r.seq, text: r.describe(), lo: r.base, hi: r.end()})
	}
	for _, h := range f.hosts {
		leaks = append(leaks, leak{seq: h.seq, text: h.describe(), lo: uint64(h.start), hi: uint64(h.end())})
	}
	for _, p := range f.phys {
		leaks = append(leaks, leak{seq: p.seq, text: p.describe()})
	}
	for s, info := range f.streams {
		leaks = append(leaks, leak{seq: info.seq, text: fmt.Sprintf("stream 0x%x on device %d from cudaStreamCreate (call #%d)", uintptr(s), info.device, info.seq)})
	}
	f.handleLeaks(func(seq int, text string) { leaks = append(leaks, leak{seq: seq, text: text}) })
	for i := range leaks {
		leaks[i].origin = f.origins[leaks[i].seq].String()
	}
	// A library's calls are not the runtime's: a handle keeps its own origin.
	f.resourceLeaks(func(seq int, text, origin string) { leaks = append(leaks, leak{seq: seq, text: text, origin: origin}) })
	for _, h := range f.annot.heaps {
		base := uint64(h.base)
		var under []string
		leaks = slices.DeleteFunc(leaks, func(l leak) bool {
			if l.lo <= base && base < l.hi {
				if l.origin != h.origin.String() {
					l.text += l.origin
				}
				under = append(under, l.text)
				return true
			}
			return false
		})
		text := fmt.Sprintf("memory heap %q at %s (%s) from nvtxMemHeapRegister, after %d runtime calls%s", h.name, h.base, bytesize.Format(h.size), h.seq, h.origin)
		if len(under) > 0 {
			text = fmt.Sprintf("%q was never closed (a memory heap of %s at %s%s); its memory: %s",
				h.name, bytesize.Format(h.size), h.base, h.origin, strings.Join(under, "; "))
		}
		leaks = append(leaks, leak{seq: h.seq, text: text})
	}
	if len(leaks) == 0 {
		return nil
	}
	// A pool registers its heaps after the same call: the names order them.
	slices.SortFunc(leaks, func(a, b leak) int { return cmp.Or(a.seq-b.seq, strings.Compare(a.text, b.text)) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d still live:", len(leaks))
	for _, l := range leaks {
		sb.WriteString("\n\t")
		sb.WriteString(l.text + l.origin)
	}
	return fmt.Errorf("%w: %s", ErrLeaked, sb.String())
}

// Calls returns the CUDA names of the calls made since NewFake or the last
// ResetCalls, in order, failed ones included.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.String()
	}
	return out
}

// ResetCalls empties the call log. Pending faults keep counting from where
// they were.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = f.calls[:0]
}

// HostRegisterIsLazy reports true: the fake's HostRegister records the range
// and touches none of its pages, so package pinned skips the touch it does
// before real CUDA's cudaHostRegister (pinned.LazyRegisterer), and a large
// pinned arena costs only the pages the caller uses.
func (f *Fake) HostRegisterIsLazy() bool { return true }

// HostAllocFlags reports the flags HostAlloc was given for the memory that
// holds b[0]; ok is false when it is not pinned host memory.
func (f *Fake) HostAllocFlags(b []byte) (flags cudart.HostAllocFlags, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.containingHost(addrOf(b))
	if len(b) == 0 || h == nil || h.registered {
		return 0, false
	}
	return h.allocFlags, true
}

// HostRegisterFlags reports the flags HostRegister was given for the
// registered memory that holds b[0]; ok is false when it is not registered.
func (f *Fake) HostRegisterFlags(b []byte) (flags cudart.HostRegisterFlags, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.containingHost(addrOf(b))
	if len(b) == 0 || h == nil || !h.registered {
		return 0, false
	}
	return h.regFlags, true
}

// PrefetchedTo reports where the managed memory that contains p was last
// prefetched (a device or cudart.CPUDevice); ok is false when p is not
// managed memory or was never prefetched.
func (f *Fake) PrefetchedTo(p cudart.DevicePtr) (device int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.containing(uint64(p))
	if r == nil || r.kind != kindManaged || !r.prefetched {
		return 0, false
	}
	return r.prefetchTo, true
}

// MemRegions is a copy of the regions registered in h, by address: what a
// test asserts its annotations by.
func (f *Fake) MemRegions(h cudart.MemHeap) ([]cudart.MemRegion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, err := f.annot.reg.Regions(uint64(h))
	if err != nil {
		return nil, annotErr("MemRegions", err)
	}
	out := make([]cudart.MemRegion, len(rs))
	for i, r := range rs {
		out[i] = cudart.MemRegion{Addr: cudart.DevicePtr(r.Addr), Size: r.Size, Name: r.Name}
	}
	return out, nil
}

// MemHeaps are the heaps registered now, by address of their first byte.
func (f *Fake) MemHeaps() map[cudart.DevicePtr]cudart.MemHeap {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[cudart.DevicePtr]cudart.MemHeap, len(f.annot.heaps))
	for h, info := range f.annot.heaps {
		out[info.base] = h
	}
	return out
}
