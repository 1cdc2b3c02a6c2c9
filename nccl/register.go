package nccl

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// Registration is a buffer registered with a communicator for NCCL's
// zero-copy paths (ncclCommRegister), until Deregister.
type Registration struct {
	c    *Comm
	ptr  cudart.DevicePtr
	size uint64
	h    uintptr // 0 once deregistered
}

// Register registers size bytes of device memory at p, on the
// communicator's device (a pool buffer's Ptr), with the communicator
// (ncclCommRegister): operations on the communicator that use the buffer
// may then skip NCCL's own copies. The buffer must stay allocated until
// Deregister.
func (c *Comm) Register(p cudart.DevicePtr, size uint64) (*Registration, error) {
	unlock, err := lockAll([]*Comm{c})
	if err != nil {
		return nil, err
	}
	defer unlock()
	call := fmt.Sprintf("ncclCommRegister(%s, %d B) on %s", p, size, c)
	fs := []ncclabi.Frame{{Call: ncclabi.CommRegister, Device: c.device, Comm: c.raw, Send: uintptr(p), Size: size}}
	if err := c.do(fs, call); err != nil {
		return nil, err
	}
	return &Registration{c: c, ptr: p, size: size, h: uintptr(fs[0].Out)}, nil
}

// Deregister ends the registration (ncclCommDeregister). It is idempotent;
// after the communicator is closed it returns nil, the registration gone
// with it.
func (r *Registration) Deregister() error {
	return r.c.deregister(ncclabi.CommDeregister, &r.h, r.ptr, r.size)
}

// deregister ends the registration or window *h of size bytes at p with
// call (ncclCommDeregister or ncclCommWindowDeregister), and zeroes *h: at
// once where it is 0 (deregistered, or nothing NCCL registered) or c is
// closed, which ended it.
func (c *Comm) deregister(call ncclabi.Call, h *uintptr, p cudart.DevicePtr, size uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *h == 0 || c.raw == 0 {
		*h = 0
		return nil
	}
	fs := []ncclabi.Frame{{Call: call, Device: c.device, Comm: c.raw, Handle: *h}}
	err := c.do(fs, fmt.Sprintf("%s(%s, %d B) on %s", call, p, size, c))
	if err == nil {
		*h = 0
	}
	return err
}
