package fakenccl

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// NCCL 2.28's window flags (NCCL_WIN_DEFAULT is 0) and
// NCCL_WIN_REQUIRED_ALIGNMENT.
const (
	winCollSymmetric = 0x1
	winAlignment     = 4096
)

// windowChecks makes each rank's checks of the windows of one group, as
// NCCL 2.28's registration job does for its rank before it waits for the
// others (ncclDevrWindowRegisterInGroup). A rank that fails them fails
// every non-blocking communicator of the group with its result, as NCCL's
// group cleanup does, its last error theirs, and the group posts nothing; the other ranks'
// registrations, in calls of their own, wait for it until their bound.
func (b *Backend) windowChecks(frames []*ncclabi.Frame) ncclabi.Result {
	for _, fr := range frames {
		if fr.Call != ncclabi.CommWindowRegister {
			continue
		}
		c := b.comms[fr.Comm]
		r := b.windowCheck(c, fr)
		if r == ncclabi.Success {
			continue
		}
		for _, f := range frames {
			if d := b.comms[f.Comm]; d != nil {
				d.last = c.last
				if !d.blocking && d.err == ncclabi.Success {
					d.err = r
				}
			}
		}
		return r
	}
	return ncclabi.Success
}

// windowCheck checks rank c's window, as NCCL 2.28 does on a host whose
// GPUs all reach each other (its symmetricSupport), in its order: the
// buffer is in an allocation (cuMemGetAddressRange, else
// ncclUnhandledCudaError), at a multiple of NCCL_WIN_REQUIRED_ALIGNMENT
// from the allocation's start (else ncclInvalidArgument), which is memory
// from cuMemCreate (cuMemRetainAllocationHandle, which refuses cudaMalloc's:
// ncclUnhandledCudaError). The fake refuses more, with
// ncclInvalidArgument, what NCCL does not check and leaves undefined: a
// window on another device than the communicator's, one that runs past
// its cuMemCreate allocation (NCCL maps that allocation alone, so a window
// across two growths of a vmem arena reaches unmapped addresses), and
// flags NCCL 2.28 does not define.
func (b *Backend) windowCheck(c *comm, fr *ncclabi.Frame) ncclabi.Result {
	p := cudart.DevicePtr(fr.Send)
	a, ok := b.lib.Allocation(p)
	switch {
	case !ok:
		return b.fail(c, ncclabi.UnhandledCudaError, "ncclCommWindowRegister: Cuda failure 'invalid argument': cuMemGetAddressRange(%s): the buffer is in no device allocation", p)
	case uint64(p-a.Base)%winAlignment != 0:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowRegister: Window address must be suitably aligned. (%s is %d B into its allocation at %s: want a multiple of %d)", p, p-a.Base, a.Base, winAlignment)
	case !a.Physical:
		return b.fail(c, ncclabi.UnhandledCudaError, "ncclCommWindowRegister: Cuda failure 'invalid argument': cuMemRetainAllocationHandle(%s): the window's memory is not from cuMemCreate (cudaMalloc's cannot be a window; make it with vmem and WithHandleTypes)", a.Base)
	case a.Device != c.device:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowRegister: buffer %s is on device %d, the communicator on device %d", p, a.Device, c.device)
	case fr.Size > uint64(a.End-p):
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowRegister: the window of %d B at %s runs past the cuMemCreate allocation that holds its start, [%s, %s), which alone NCCL 2.28 maps for it", fr.Size, p, a.Base, a.End)
	case fr.Flags&^winCollSymmetric != 0:
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowRegister: window flags 0x%x: NCCL 2.28 defines NCCL_WIN_DEFAULT (0) and NCCL_WIN_COLL_SYMMETRIC (1) only", fr.Flags)
	}
	return ncclabi.Success
}

// windowsAgree says how two ranks' parts of one window disagree, "" when
// they agree. Symmetric memory is registered the same on every rank: NCCL
// maps each rank's allocation at one offset of a space that every rank
// lays out alike, with the size of its own allocation, so the sizes, the
// flags, the offset into the allocation and the allocation's size must be
// equal (nccl4py documents the size: "buffer size must be equal among
// ranks"); NCCL checks none of it, and a rank whose peer's allocation is
// smaller fails to map it while the others wait. The fake fails every rank
// with ncclInvalidUsage, as for collectives that disagree.
func windowsAgree(p, q *part) string {
	a, b := p.f, q.f
	switch {
	case a.Size != b.Size:
		return fmt.Sprintf("rank %d registers %d B, rank %d %d B", q.comm.rank, b.Size, p.comm.rank, a.Size)
	case a.Flags != b.Flags:
		return fmt.Sprintf("rank %d registers with flags 0x%x, rank %d with 0x%x", q.comm.rank, b.Flags, p.comm.rank, a.Flags)
	case a.Send-uintptr(p.mem.Base) != b.Send-uintptr(q.mem.Base):
		return fmt.Sprintf("rank %d's window is %d B into its allocation, rank %d's %d B", q.comm.rank, b.Send-uintptr(q.mem.Base), p.comm.rank, a.Send-uintptr(p.mem.Base))
	case p.mem.End-p.mem.Base != q.mem.End-q.mem.Base:
		return fmt.Sprintf("rank %d's window is in an allocation of %d B, rank %d's in one of %d B", q.comm.rank, q.mem.End-q.mem.Base, p.comm.rank, p.mem.End-p.mem.Base)
	}
	return ""
}

// unshared reports whether a window every rank posted can never be
// registered, and leaves it so: each rank maps its peers' memory, which
// their NCCL exports as a POSIX file descriptor, on a thread of its own
// (proxyGetFd), and a rank whose memory was not made exportable
// (cudart.HandleTypePOSIXFileDescriptor) fails that export there without
// an answer to the peer, which waits for ever. Its communicators stay in
// progress until their bound, or their calls blocked, until aborted. A
// communicator of one rank maps no peer.
func (b *Backend) unshared(o *op) bool {
	if len(o.parts) == 1 {
		return false
	}
	for _, p := range o.parts {
		if p.mem.HandleTypes&cudart.HandleTypePOSIXFileDescriptor != 0 {
			continue
		}
		for _, q := range o.parts {
			q.comm.last = fmt.Sprintf("ncclCommWindowRegister: rank %d's memory at %s is not exportable as a POSIX file descriptor (cuMemCreate without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): its export to the peers fails on NCCL's proxy thread, and they wait for it for ever", p.comm.rank, p.mem.Base)
		}
		return true
	}
	return false
}

// windowsMade registers the window of every rank of o, charging each
// rank's device WindowCharge or SymmetricWindowCharge, and hands each its
// handle; a rank whose device is out of memory fails every rank's
// communicator, and gets no window.
func (b *Backend) windowsMade(o *op) {
	cs := make([]*comm, len(o.parts))
	for i, p := range o.parts {
		cs[i] = p.comm
	}
	for _, p := range o.parts {
		c := p.comm
		charge := uint64(WindowCharge)
		if p.f.Flags&winCollSymmetric != 0 {
			charge = SymmetricWindowCharge
		}
		if c.err == ncclabi.Success && b.charge(c, charge, "ncclCommWindowRegister", cs) {
			h := b.handle(&c.wins, reg{ptr: cudart.DevicePtr(p.f.Send), size: p.f.Size})
			atomic.StoreUint64(p.out, uint64(h))
		}
		p.out = nil
	}
}

// deregisterWindow is ncclCommWindowDeregister, which NCCL makes on its
// rank alone: NULL is no window, and a handle must be a window of c.
func (b *Backend) deregisterWindow(c *comm, fr *ncclabi.Frame) ncclabi.Result {
	if fr.Handle == 0 {
		return ncclabi.Success
	}
	if _, ok := c.wins[fr.Handle]; !ok {
		return b.fail(c, ncclabi.InvalidArgument, "ncclCommWindowDeregister: window 0x%x is not a window of comm 0x%x", fr.Handle, c.raw)
	}
	delete(c.wins, fr.Handle)
	return ncclabi.Success
}
