package pool

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/internal/checked"
	"github.com/cudapool/cudapool/plan"
)

// Profile declares the buffers of one request at one shape (batch 1, batch
// 32, ...): their sizes, names and lifetimes, as WantDevice and WantHost do
// for a pool. NewSlots plans each profile once and places it in every slot.
// A Profile is a declaration only: the same one may be given to several
// NewSlots calls, and it is not safe to declare buffers from several
// goroutines at once.
type Profile struct {
	name string
	bufs []profileBuf
}

// profileBuf is one declared buffer.
type profileBuf struct {
	arena Arena
	r     request
}

// Ref is the handle of a buffer declared in a Profile: Slot.Ptr and
// Slot.Bytes find the buffer by it without a lookup by name. The zero Ref
// names no buffer.
type Ref struct {
	p *Profile
	i int32
}

// NewProfile starts the declaration of a profile; name is what Acquire takes
// to choose it. The profile given to NewSlots as SlotLayout.Shared is named only
// for errors.
func NewProfile(name string) *Profile { return &Profile{name: name} }

// Name is the name given to NewProfile.
func (pr *Profile) Name() string {
	if pr == nil {
		return ""
	}
	return pr.name
}

// Device declares a device buffer of size bytes. Its options are those of
// WantDevice: Name, so that Slot.Lookup finds it, and Live, so that buffers
// of the profile never alive together share bytes of the slot.
func (pr *Profile) Device(size uint64, opts ...WantOption) (Ref, error) {
	return pr.declare(Device, size, opts)
}

// Host declares a pinned host buffer of size bytes, with the options of
// WantHost: a request's staging buffers.
func (pr *Profile) Host(size uint64, opts ...WantOption) (Ref, error) {
	return pr.declare(Host, size, opts)
}

func (pr *Profile) declare(kind Arena, size uint64, opts []WantOption) (Ref, error) {
	r, err := request{size: size}.with(opts)
	if err != nil {
		return Ref{}, err
	}
	what := kind.String() + " " + r.label()
	switch {
	case pr == nil:
		return Ref{}, fmt.Errorf("%w: %s: nil *Profile; use NewProfile", ErrInvalidRequest, what)
	case size == 0:
		return Ref{}, fmt.Errorf("%w: %s in profile %q: size is zero", ErrInvalidRequest, what, pr.name)
	case size > ^uint64(0)-(align.CUDA-1):
		return Ref{}, fmt.Errorf("%w: %s in profile %q: size %d B overflows once aligned to %d B", ErrInvalidRequest, what, pr.name, size, align.CUDA)
	case r.name != "" && pr.find(r.name) >= 0:
		return Ref{}, fmt.Errorf("%w: %s in profile %q: the name is already declared", ErrInvalidRequest, what, pr.name)
	case len(pr.bufs) == maxProfileBuffers:
		return Ref{}, fmt.Errorf("%w: %s in profile %q: a profile holds at most %d buffers", ErrInvalidRequest, what, pr.name, maxProfileBuffers)
	}
	pr.bufs = append(pr.bufs, profileBuf{arena: kind, r: r})
	return Ref{p: pr, i: int32(len(pr.bufs) - 1)}, nil
}

// maxProfileBuffers keeps a Ref's index in an int32.
const maxProfileBuffers = 1 << 30

// find is the index of the buffer called name, or -1.
func (pr *Profile) find(name string) int {
	return slices.IndexFunc(pr.bufs, func(b profileBuf) bool { return b.r.name == name })
}

// Lookup finds the buffer declared with Name(name).
func (pr *Profile) Lookup(name string) (Ref, error) {
	if pr == nil {
		return Ref{}, fmt.Errorf("%w: nil *Profile; use NewProfile", ErrInvalidRequest)
	}
	i := pr.find(name)
	if i < 0 {
		return Ref{}, fmt.Errorf("%w: no buffer %q in profile %q", ErrNotInProfile, name, pr.name)
	}
	return Ref{p: pr, i: int32(i)}, nil
}

// Name is the buffer's name, or "" for an unnamed buffer or the zero Ref.
func (r Ref) Name() string {
	if r.p == nil {
		return ""
	}
	return r.p.bufs[r.i].r.name
}

// Size is the buffer's declared size in bytes; 0 for the zero Ref.
func (r Ref) Size() uint64 {
	if r.p == nil {
		return 0
	}
	return r.p.bufs[r.i].r.size
}

// planned is a profile as NewSlots placed it: every buffer's offset inside
// a slot's region of its arena, fixed for the life of the Slots. Its counters
// are guarded by the owning Slots' mu.
type planned struct {
	decl  *Profile
	name  string
	index int
	bufs  []placedBuf
	names map[string]int32

	end       [numArenas]uint64 // bytes of a slot's region the profile uses
	requested [numArenas]uint64 // sum of its buffers' sizes
	unshared  [numArenas]uint64 // sum of their aligned sizes: what no sharing would need

	inUse        int
	acquisitions uint64
	waits        uint64
	waited       atomic.Int64 // nanoseconds; added by the waiter once awake, without s.mu
}

// placedBuf is where one buffer of a profile is in a slot.
type placedBuf struct {
	arena  Arena
	offset uint64
	size   uint64
	name   string
}

// planProfile places a copy of pr's buffers, arena by arena, with the
// planner: buffers with Live ranges that never meet share bytes, as in a
// pool's Satisfy; a buffer without Live lives for the whole request.
func planProfile(pr *Profile, index int) (*planned, error) {
	bufs := slices.Clone(pr.bufs)
	out := &planned{decl: pr, name: pr.name, index: index, bufs: make([]placedBuf, len(bufs)), names: make(map[string]int32, len(bufs))}
	for k := range numArenas {
		var reqs []plan.Request
		var idx []int
		for i, b := range bufs {
			if b.arena != k {
				continue
			}
			req := plan.Request{Size: alignedSize(b.r.size), First: wholeFirst, Last: wholeLast}
			if b.r.hasLife {
				req.First, req.Last = int(b.r.first), int(b.r.last)
			}
			reqs = append(reqs, req)
			idx = append(idx, i)
			var okRequested, okUnshared bool
			out.requested[k], okRequested = checked.Add(out.requested[k], b.r.size)
			out.unshared[k], okUnshared = checked.Add(out.unshared[k], req.Size)
			if !okRequested || !okUnshared {
				return nil, fmt.Errorf("%w: profile %q: the sizes of its %s buffers add up past 2^64 B, which its stats could not report",
					ErrInvalidRequest, pr.name, k)
			}
		}
		if len(reqs) == 0 {
			continue
		}
		res, err := plan.Plan(reqs)
		if errors.Is(err, plan.ErrOverflow) {
			return nil, fmt.Errorf("%w: profile %q: its %s buffers need more than %d B", ErrInvalidRequest, pr.name, k, ^uint64(0))
		}
		if err != nil {
			return nil, fmt.Errorf("pool: plan the %s buffers of profile %q: %w", k, pr.name, err)
		}
		for j, i := range idx {
			out.bufs[i] = placedBuf{arena: k, offset: res.Offsets[j], size: bufs[i].r.size, name: bufs[i].r.name}
		}
		out.end[k] = res.ArenaBytes
	}
	for i, b := range bufs {
		if b.r.name != "" {
			out.names[b.r.name] = int32(i)
		}
	}
	return out, nil
}
