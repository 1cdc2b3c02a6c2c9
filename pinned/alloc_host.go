package pinned

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/devreset"
)

// allocHost is MethodHostAlloc: cudaHostAlloc, or cudaMallocHost on a
// runtime without cudart.HostAllocator when no flags need it.
func allocHost(rt cudart.Runtime, device int, size uint64, c config) (*Region, error) {
	ha, ok := rt.(cudart.HostAllocator)
	if !ok && c.flags != 0 {
		return nil, fmt.Errorf("%w: flags %s need cudaHostAlloc, which the runtime (%T) lacks (no cudart.HostAllocator)", ErrUnsupported, c.flags, rt)
	}
	var p []byte
	var err error
	reset := devreset.Start(rt, device)
	if ok {
		if c.flags&Mapped != 0 {
			enableMapHost(ha, device, c.logger)
		}
		p, err = ha.HostAlloc(device, size, c.flags.hostAlloc())
	} else {
		p, err = rt.MallocHost(device, size)
	}
	if err != nil {
		return nil, fmt.Errorf("pinned: cudaHostAlloc of %s (flags %s): %w", bytesize.Format(size), c.flags, err)
	}
	r := &Region{rt: rt, device: device, method: MethodHostAlloc, flags: c.flags, b: p, host: p, reset: reset}
	if err := pinnedRanges.claim(r.b, r.what(), reset); err != nil {
		return nil, errors.Join(err, rt.FreeHost(p))
	}
	if c.flags&Mapped != 0 {
		if r.dev, err = ha.HostGetDevicePointer(device, p); err != nil {
			return nil, undo(r, fmt.Errorf("pinned: cudaHostGetDevicePointer: %w", err))
		}
	}
	return r, nil
}
