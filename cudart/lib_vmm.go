package cudart

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// MemGetAllocationGranularity is cuMemGetAllocationGranularity for pinned
// memory on device.
func (l *Lib) MemGetAllocationGranularity(device int, recommended bool) (uint64, error) {
	if err := l.driverReady("cuMemGetAllocationGranularity"); err != nil {
		return 0, err
	}
	r := l.be.memGetAllocationGranularity(device, recommended)
	if r.code != 0 {
		which := "minimum"
		if recommended {
			which = "recommended"
		}
		return 0, l.fail(r, "cuMemGetAllocationGranularity(pinned on device %d, %s)", device, which)
	}
	return r.a, nil
}

// MemCreate is cuMemCreate of size bytes of pinned memory on device. Device
// becomes the one whose context the calls without a device use.
func (l *Lib) MemCreate(device int, size uint64) (PhysHandle, error) {
	if err := l.driverReady("cuMemCreate"); err != nil {
		return 0, err
	}
	r := l.be.memCreate(device, size)
	if r.code != 0 {
		return 0, l.fail(r, "cuMemCreate(%s, pinned on device %d)", humanize.Bytes(size), device)
	}
	l.vmmDevice.Store(int64(device))
	return PhysHandle(r.a), nil
}

// MemRelease is cuMemRelease.
func (l *Lib) MemRelease(h PhysHandle) error {
	if err := l.driverReady("cuMemRelease"); err != nil {
		return err
	}
	if r := l.be.memRelease(l.vmmDev(), h); r.code != 0 {
		return l.fail(r, "cuMemRelease(handle 0x%x)", uint64(h))
	}
	return nil
}

// MemAddressReserve is cuMemAddressReserve. A non-zero hint asks for that
// address; the result may differ.
func (l *Lib) MemAddressReserve(size, alignment uint64, hint DevicePtr) (DevicePtr, error) {
	if err := l.driverReady("cuMemAddressReserve"); err != nil {
		return 0, err
	}
	r := l.be.memAddressReserve(l.vmmDev(), size, alignment, hint)
	if r.code != 0 {
		return 0, l.fail(r, "cuMemAddressReserve(%s, alignment %s, hint %s)", humanize.Bytes(size), humanize.Bytes(alignment), hint)
	}
	return DevicePtr(r.a), nil
}

// MemAddressFree is cuMemAddressFree.
func (l *Lib) MemAddressFree(p DevicePtr, size uint64) error {
	if err := l.driverReady("cuMemAddressFree"); err != nil {
		return err
	}
	if r := l.be.memAddressFree(l.vmmDev(), p, size); r.code != 0 {
		return l.fail(r, "cuMemAddressFree(%s, %s)", p, humanize.Bytes(size))
	}
	return nil
}

// MemMap is cuMemMap: size bytes of h, from offset, at p.
func (l *Lib) MemMap(p DevicePtr, size, offset uint64, h PhysHandle) error {
	if err := l.driverReady("cuMemMap"); err != nil {
		return err
	}
	if r := l.be.memMap(l.vmmDev(), p, size, offset, h); r.code != 0 {
		return l.fail(r, "cuMemMap(%s, %s, offset %s, handle 0x%x)", p, humanize.Bytes(size), humanize.Bytes(offset), uint64(h))
	}
	return nil
}

// MemUnmap is cuMemUnmap.
func (l *Lib) MemUnmap(p DevicePtr, size uint64) error {
	if err := l.driverReady("cuMemUnmap"); err != nil {
		return err
	}
	if r := l.be.memUnmap(l.vmmDev(), p, size); r.code != 0 {
		return l.fail(r, "cuMemUnmap(%s, %s)", p, humanize.Bytes(size))
	}
	return nil
}

// MemSetAccess is cuMemSetAccess with one read-write CUmemAccessDesc per
// device, in one call.
func (l *Lib) MemSetAccess(p DevicePtr, size uint64, devices []int) error {
	if err := l.driverReady("cuMemSetAccess"); err != nil {
		return err
	}
	if len(devices) == 0 {
		return invalid(fmt.Sprintf("cuMemSetAccess(%s, %s, no devices)", p, humanize.Bytes(size)), "no device to give access to")
	}
	if r := l.be.memSetAccess(l.vmmDev(), p, size, devices); r.code != 0 {
		return l.fail(r, "cuMemSetAccess(%s, %s, read-write for devices %v)", p, humanize.Bytes(size), devices)
	}
	return nil
}

// driverReady is the error of driver call fn made now, if it cannot be.
func (l *Lib) driverReady(fn string) error {
	if l.closed.Load() {
		return closedError(fn)
	}
	if l.driverErr != nil {
		return fmt.Errorf("%s: %w", fn, l.driverErr)
	}
	return nil
}

func (l *Lib) vmmDev() int { return int(l.vmmDevice.Load()) }
