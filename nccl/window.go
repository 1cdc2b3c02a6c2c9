package nccl

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/enum"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// WindowFlags are ncclCommWindowRegister's flags (winFlags).
type WindowFlags int32

const (
	// WindowDefault is NCCL_WIN_DEFAULT: a window NCCL's collectives and
	// transfers may use without copies.
	WindowDefault WindowFlags = 0
	// WindowCollSymmetric is NCCL_WIN_COLL_SYMMETRIC: every rank's window
	// is laid out alike, so that a collective whose buffers lie in such
	// windows, at the same offsets on every rank, may run NCCL's
	// symmetric kernels.
	WindowCollSymmetric WindowFlags = 1
)

// String names the flags as nccl.h does.
func (f WindowFlags) String() string { return windowFlags.Name(f) }

var windowFlags = enum.Table[WindowFlags]{Prefix: "NCCL_WIN_", Names: []string{WindowDefault: "DEFAULT", WindowCollSymmetric: "COLL_SYMMETRIC"}, Unknown: "winFlags(0x%x)"}

// WindowAlignment is NCCL_WIN_REQUIRED_ALIGNMENT: a window starts this
// many bytes, or a multiple, from the start of the cuMemCreate allocation
// that holds it.
const WindowAlignment = 4096

// Window is a buffer registered by every rank of a communicator as an
// NCCL window (ncclCommWindowRegister), until Deregister: NCCL maps each
// rank's window into every other rank's address space, so that collectives
// on buffers in windows run without NCCL's copies, and symmetric ones
// (WindowCollSymmetric) with kernels that read and write the peers' memory
// directly.
type Window struct {
	c    *Comm
	ptr  cudart.DevicePtr
	size uint64
	h    uintptr // the ncclWindow_t; 0 once deregistered, or where NCCL made none
}

// RegisterWindow registers size bytes at p, on the communicator's device,
// as a window (ncclCommWindowRegister, NCCL 2.27 and later). It is
// collective: every rank of the communicator registers its window, with
// the same size and flags, in the same order as its other windows, and the
// call returns once all have, within the communicator's bound (an error
// wrapping ErrTimeout after it, the communicator aborted, as for an
// operation). A library without windows returns an error wrapping
// ErrNotSupported (Library.HasWindows tells beforehand). One goroutine
// registering the windows of several of its devices' ranks uses
// Library.RegisterWindows, which registers them in one group.
//
// The memory must be what NCCL can share with the other ranks' devices:
// memory from cuMemCreate exportable as a POSIX file descriptor, at NCCL's
// granularity, as ncclMemAlloc makes it, which a vmem Arena made with
// vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor) is. The
// window starts a multiple of WindowAlignment into one of the arena's
// growths and ends in it (NCCL maps that growth alone), at the same
// offset into a growth of the same size on every rank. NCCL 2.28, on GPUs
// that all reach each other, refuses the rest: memory from cudaMalloc (a
// fixed pool arena's) with an error wrapping ErrUnhandledCudaError, a
// misaligned window with ErrInvalidArgument, each failing the
// communicator; memory from cuMemCreate that cannot be exported leaves
// every rank waiting until the bound. The memory must stay allocated until
// Deregister.
func (c *Comm) RegisterWindow(p cudart.DevicePtr, size uint64, flags WindowFlags) (*Window, error) {
	ws, err := c.l.RegisterWindows([]*Comm{c}, []cudart.DevicePtr{p}, size, flags)
	if err != nil {
		return nil, err
	}
	return ws[0], nil
}

// RegisterWindows registers ptrs[i], size bytes on comms[i]'s device, as
// comms[i]'s window, for every i, in one group (see Comm.RegisterWindow):
// how one goroutine registers a window on each of its devices' ranks, whose
// registrations wait for each other. The communicators are distinct, of l,
// and all non-blocking or all blocking (WithInlineLaunch). It returns the
// windows in the order of comms, or the first error; the bound is the
// shortest of the communicators'.
func (l *Library) RegisterWindows(comms []*Comm, ptrs []cudart.DevicePtr, size uint64, flags WindowFlags) ([]*Window, error) {
	if !l.HasWindows() {
		v, _ := l.Version()
		return nil, fmt.Errorf("%w: ncclCommWindowRegister: NCCL %s (%s) has no windows; NCCL 2.27 and later have", ErrNotSupported, v, l.path)
	}
	switch {
	case len(comms) == 0 || len(comms) != len(ptrs):
		return nil, fmt.Errorf("%w: RegisterWindows: %d communicators, %d buffers: want one buffer a communicator, at least one", ErrInvalidOption, len(comms), len(ptrs))
	case size == 0:
		return nil, fmt.Errorf("%w: RegisterWindows: a window of 0 B", ErrInvalidOption)
	}
	inline, timeout := comms[0] != nil && comms[0].inline, DefaultTimeout
	for i, c := range comms {
		switch {
		case c == nil || c.l != l:
			return nil, fmt.Errorf("%w: RegisterWindows: communicator %d of %d is not of this library", ErrInvalidOption, i+1, len(comms))
		case slices.Contains(comms[:i], c):
			return nil, fmt.Errorf("%w: RegisterWindows: %s given twice", ErrInvalidOption, c)
		case c.inline != inline:
			return nil, fmt.Errorf("%w: RegisterWindows: communicator %d of %d is %s, the first %s", ErrInvalidOption, i+1, len(comms), kind(c.inline), kind(inline))
		}
		if i == 0 || c.timeout < timeout {
			timeout = c.timeout
		}
	}
	unlock, err := lockAll(comms)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// NCCL writes each window (a frame's Out) from its own thread once
	// every rank has registered, before the communicator leaves
	// ncclInProgress: fs stays referenced, and is read only then.
	fs := make([]ncclabi.Frame, 0, len(comms)+2)
	if len(comms) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupStart})
	}
	first := len(fs)
	for i, c := range comms {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.CommWindowRegister, Device: c.device, Comm: c.raw, Send: uintptr(ptrs[i]), Size: size, Flags: int32(flags)})
	}
	if len(comms) > 1 {
		fs = append(fs, ncclabi.Frame{Call: ncclabi.GroupEnd})
	}
	call := windowCall(comms, ptrs, size, flags)
	named := func() string { return call }
	if inline {
		n, derr, late := l.doBlocking(fs, comms, timeout, named)
		if late != nil {
			return nil, late
		}
		err = l.outcome(fs, n, derr, call, failed(fs, first, comms, n))
	} else if n, derr := l.be.Do(fs); derr != nil || !ok(fs[n-1].Result) {
		err = l.outcome(fs, n, derr, call, failed(fs, first, comms, n))
	} else {
		err = l.wait(comms, named, timeout)
	}
	if err != nil {
		return nil, err
	}
	ws := make([]*Window, len(comms))
	for i, c := range comms {
		ws[i] = &Window{c: c, ptr: ptrs[i], size: size, h: uintptr(atomic.LoadUint64(&fs[first+i].Out))}
	}
	return ws, nil
}

// failed is the communicator of the frame a batch of window registrations
// stopped at, n frames made: its last error says why.
func failed(fs []ncclabi.Frame, first int, comms []*Comm, n int) *Comm {
	if i := n - 1 - first; i >= 0 && i < len(comms) {
		return comms[i]
	}
	return comms[0]
}

// windowCall names a registration of windows, for messages.
func windowCall(comms []*Comm, ptrs []cudart.DevicePtr, size uint64, flags WindowFlags) string {
	s := make([]string, len(comms))
	for i, c := range comms {
		s[i] = fmt.Sprintf("ncclCommWindowRegister(%s, %s, %s) on %s", ptrs[i], bytesize.Format(size), flags, c)
	}
	if len(s) == 1 {
		return s[0]
	}
	return "group {" + strings.Join(s, "; ") + "}"
}

// Deregister ends the window on its rank (ncclCommWindowDeregister, which
// is not collective). It is idempotent; after the communicator is closed
// it returns nil, the window gone with it.
func (w *Window) Deregister() error {
	return w.c.deregister(ncclabi.CommWindowDeregister, &w.h, w.ptr, w.size)
}
