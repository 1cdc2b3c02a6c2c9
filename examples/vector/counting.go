package main

import (
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart"
)

// counting is a runtime that counts the calls each growth path makes, on
// real CUDA as on the fake, and the hinted reservations CUDA placed
// elsewhere (each one makes a Vector move).
type counting struct {
	cudart.Full
	calls  atomic.Int64
	missed atomic.Int64
}

func (c *counting) reset() (calls, missed int64) {
	return c.calls.Swap(0), c.missed.Swap(0)
}

func (c *counting) Malloc(device int, size uint64) (cudart.DevicePtr, error) {
	c.calls.Add(1)
	return c.Full.Malloc(device, size)
}

func (c *counting) Free(device int, p cudart.DevicePtr) error {
	c.calls.Add(1)
	return c.Full.Free(device, p)
}

func (c *counting) Memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind) error {
	c.calls.Add(1)
	return c.Full.Memcpy(device, dst, src, kind)
}

func (c *counting) DeviceSynchronize(device int) error {
	c.calls.Add(1)
	return c.Full.DeviceSynchronize(device)
}

func (c *counting) MemGetAllocationGranularity(device int, recommended bool) (uint64, error) {
	c.calls.Add(1)
	return c.Full.MemGetAllocationGranularity(device, recommended)
}

func (c *counting) MemCreate(device int, size uint64) (cudart.PhysHandle, error) {
	c.calls.Add(1)
	return c.Full.MemCreate(device, size)
}

func (c *counting) MemRelease(h cudart.PhysHandle) error {
	c.calls.Add(1)
	return c.Full.MemRelease(h)
}

func (c *counting) MemAddressReserve(size, alignment uint64, hint cudart.DevicePtr) (cudart.DevicePtr, error) {
	c.calls.Add(1)
	p, err := c.Full.MemAddressReserve(size, alignment, hint)
	if err == nil && hint != 0 && p != hint {
		c.missed.Add(1)
	}
	return p, err
}

func (c *counting) MemAddressFree(p cudart.DevicePtr, size uint64) error {
	c.calls.Add(1)
	return c.Full.MemAddressFree(p, size)
}

func (c *counting) MemMap(p cudart.DevicePtr, size, offset uint64, h cudart.PhysHandle) error {
	c.calls.Add(1)
	return c.Full.MemMap(p, size, offset, h)
}

func (c *counting) MemUnmap(p cudart.DevicePtr, size uint64) error {
	c.calls.Add(1)
	return c.Full.MemUnmap(p, size)
}

func (c *counting) MemSetAccess(p cudart.DevicePtr, size uint64, devices []int) error {
	c.calls.Add(1)
	return c.Full.MemSetAccess(p, size, devices)
}
