package main

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pinned"
)

// memory is host memory from one source, and how to give it back.
type memory struct {
	b    []byte
	via  string // what pinned it, after any fallback; "-" when not pinned
	free func() error
}

// source is one kind of host memory the program measures.
type source struct {
	name   string
	pinned bool // whether pinning and freeing are timed
	alloc  func(rt cudart.Full, size uint64) (memory, error)
}

// The summary line compares sources[featured], the pinned package's
// default, with sources[baseline], cudaMallocHost.
const baseline, featured = 1, 2

var sources = []source{
	{"Go memory (pageable)", false, allocGo},
	{"cudaMallocHost", true, allocMallocHost},
	{"pinned Register (huge pages, parallel touch)", true, allocPinned(pinned.MethodRegister)},
	{"pinned RegisterNoHugePages", true, allocPinned(pinned.MethodRegisterNoHugePages)},
	{"pinned HostAlloc (cudaHostAlloc)", true, allocPinned(pinned.MethodHostAlloc)},
}

// allocGo is an ordinary slice, touched so that page faults are not timed
// as copies.
func allocGo(_ cudart.Full, size uint64) (memory, error) {
	b := make([]byte, size)
	fill(b)
	return memory{b: b, via: "-", free: func() error { return nil }}, nil
}

func allocMallocHost(rt cudart.Full, size uint64) (memory, error) {
	b, err := rt.MallocHost(0, size)
	if err != nil {
		return memory{}, err
	}
	return memory{b: b, via: "cudaMallocHost", free: func() error { return rt.FreeHost(b) }}, nil
}

func allocPinned(m pinned.Method) func(cudart.Full, uint64) (memory, error) {
	return func(rt cudart.Full, size uint64) (memory, error) {
		r, err := pinned.Alloc(rt, 0, size, pinned.WithMethod(m))
		if err != nil {
			return memory{}, err
		}
		via := fmt.Sprintf("pinned.Method%s", r.Method())
		if r.Method() != m {
			via += " (fallback)"
		}
		return memory{b: r.Bytes(), via: via, free: r.Free}, nil
	}
}
