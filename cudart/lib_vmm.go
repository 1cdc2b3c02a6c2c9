package cudart

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// MemGetAllocationGranularity is cuMemGetAllocationGranularity for pinned
// memory on device.
func (l *Lib) MemGetAllocationGranularity(device int, recommended bool) (uint64, error) {
	if err := l.driverReady(CallCuMemGetAllocationGranularity); err != nil {
		return 0, err
	}
	which, option := "minimum", uintptr(0)
	if recommended {
		which, option = "recommended", 1
	}
	r := l.callMem(CallCuMemGetAllocationGranularity, device, [2]Mem{structMem(pinnedOn(device))}, option)
	if r.code != 0 {
		return 0, l.fail(CallCuMemGetAllocationGranularity, r, "(pinned on device %d, %s)", device, which)
	}
	return r.a, nil
}

// MemCreate is cuMemCreate of size bytes of pinned memory on device. Device
// becomes the one whose context the calls without a device use.
func (l *Lib) MemCreate(device int, size uint64) (PhysHandle, error) {
	if err := l.driverReady(CallCuMemCreate); err != nil {
		return 0, err
	}
	r := l.callMem(CallCuMemCreate, device, [2]Mem{structMem(pinnedOn(device))}, uintptr(size), 0)
	if r.code != 0 {
		return 0, l.fail(CallCuMemCreate, r, "(%s, pinned on device %d)", bytesize.Format(size), device)
	}
	l.vmmDevice.Store(int64(device))
	return PhysHandle(r.a), nil
}

// MemRelease is cuMemRelease.
func (l *Lib) MemRelease(h PhysHandle) error {
	if err := l.driverReady(CallCuMemRelease); err != nil {
		return err
	}
	if r := l.call(CallCuMemRelease, l.vmmDev(), uintptr(h)); r.code != 0 {
		return l.fail(CallCuMemRelease, r, "(handle 0x%x)", uint64(h))
	}
	return nil
}

// MemAddressReserve is cuMemAddressReserve. A non-zero hint asks for that
// address; the result may differ.
func (l *Lib) MemAddressReserve(size, alignment uint64, hint DevicePtr) (DevicePtr, error) {
	if err := l.driverReady(CallCuMemAddressReserve); err != nil {
		return 0, err
	}
	r := l.call(CallCuMemAddressReserve, l.vmmDev(), uintptr(size), uintptr(alignment), uintptr(hint), 0)
	if r.code != 0 {
		return 0, l.fail(CallCuMemAddressReserve, r, "(%s, alignment %s, hint %s)", bytesize.Format(size), bytesize.Format(alignment), hint)
	}
	return DevicePtr(r.a), nil
}

// MemAddressFree is cuMemAddressFree.
func (l *Lib) MemAddressFree(p DevicePtr, size uint64) error {
	if err := l.driverReady(CallCuMemAddressFree); err != nil {
		return err
	}
	if r := l.call(CallCuMemAddressFree, l.vmmDev(), uintptr(p), uintptr(size)); r.code != 0 {
		return l.fail(CallCuMemAddressFree, r, "(%s, %s)", p, bytesize.Format(size))
	}
	return nil
}

// MemMap is cuMemMap: size bytes of h, from offset, at p.
func (l *Lib) MemMap(p DevicePtr, size, offset uint64, h PhysHandle) error {
	if err := l.driverReady(CallCuMemMap); err != nil {
		return err
	}
	if r := l.call(CallCuMemMap, l.vmmDev(), uintptr(p), uintptr(size), uintptr(offset), uintptr(h), 0); r.code != 0 {
		return l.fail(CallCuMemMap, r, "(%s, %s, offset %s, handle 0x%x)", p, bytesize.Format(size), bytesize.Format(offset), uint64(h))
	}
	return nil
}

// MemUnmap is cuMemUnmap.
func (l *Lib) MemUnmap(p DevicePtr, size uint64) error {
	if err := l.driverReady(CallCuMemUnmap); err != nil {
		return err
	}
	if r := l.call(CallCuMemUnmap, l.vmmDev(), uintptr(p), uintptr(size)); r.code != 0 {
		return l.fail(CallCuMemUnmap, r, "(%s, %s)", p, bytesize.Format(size))
	}
	return nil
}

// MemSetAccess is cuMemSetAccess with one read-write CUmemAccessDesc per
// device, in one call.
func (l *Lib) MemSetAccess(p DevicePtr, size uint64, devices []int) error {
	if err := l.driverReady(CallCuMemSetAccess); err != nil {
		return err
	}
	if len(devices) == 0 {
		return invalid(CallCuMemSetAccess, "no device to give access to", "(%s, %s, no devices)", p, bytesize.Format(size))
	}
	desc := readWriteFor(devices)
	if r := l.callMem(CallCuMemSetAccess, l.vmmDev(), [2]Mem{sliceMem(desc)}, uintptr(p), uintptr(size), uintptr(len(desc))); r.code != 0 {
		return l.fail(CallCuMemSetAccess, r, "(%s, %s, read-write for devices %v)", p, bytesize.Format(size), devices)
	}
	return nil
}

// driverReady is the error of driver call c made now, if it cannot be.
func (l *Lib) driverReady(c Call) error {
	if l.unusable() {
		return closedError(c)
	}
	if l.driverErr != nil {
		return fmt.Errorf("%s: %w", c, l.driverErr)
	}
	return nil
}

func (l *Lib) vmmDev() int { return int(l.vmmDevice.Load()) }
