package pinned

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/devreset"
)

// allocRegistered implements the registering methods: mmap, huge page advice,
// parallel touch (unless the runtime is a LazyRegisterer), then
// cudaHostRegister in chunks and, for Mapped, the device address.
func allocRegistered(rt cudart.Runtime, device int, size uint64, c config) (*Region, error) {
	hr, ok := rt.(cudart.HostRegisterer)
	if !ok {
		return nil, fmt.Errorf("%w: the runtime (%T) cannot register host memory (no cudart.HostRegisterer)", ErrUnsupported, rt)
	}
	if c.flags&WriteCombined != 0 {
		return nil, fmt.Errorf("%w: WriteCombined has no cudaHostRegister equivalent; only MethodHostAlloc offers it", ErrUnsupported)
	}
	var ha cudart.HostAllocator
	if c.flags&Mapped != 0 {
		if ha, ok = rt.(cudart.HostAllocator); !ok {
			return nil, fmt.Errorf("%w: Mapped needs cudaHostGetDevicePointer, which the runtime (%T) lacks (no cudart.HostAllocator)", ErrUnsupported, rt)
		}
	}
	m, err := mapAnon(size)
	if err != nil {
		return nil, err
	}
	if err := adviseHugePages(m, c.method == MethodRegister); err != nil {
		c.logger.Debug("pinned: huge page advice refused", zap.Error(err))
	}
	if needsTouch(rt) {
		touch(m, c.workers)
	}
	r := &Region{rt: rt, hr: hr, device: device, method: c.method, flags: c.flags, b: m, mapping: m, reset: devreset.Start(rt, device)}
	if err := pinnedRanges.claim(m, r.what(), r.reset); err != nil {
		return nil, errors.Join(err, unmapAnon(m))
	}
	if ha != nil {
		enableMapHost(ha, device, c.logger)
	}
	r.chunks, err = registerChunks(hr, device, m, c.flags)
	if err == nil && ha != nil {
		r.dev, err = devicePointer(ha, device, r.chunks)
	}
	if err != nil {
		return nil, undo(r, err)
	}
	return r, nil
}

// undo frees a region that Alloc could not finish, and joins to err what
// the cleanup could not undo.
func undo(r *Region, err error) error {
	if rerr := r.release(); rerr != nil {
		return errors.Join(err, rerr, errLeftPinned)
	}
	return err
}
