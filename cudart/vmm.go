package cudart

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MemGetAllocationGranularity is cuMemGetAllocationGranularity for pinned
// memory on device.
func (l *library) MemGetAllocationGranularity(device int, recommended bool) (uint64, error) {
	return l.MemGetExportableGranularity(device, 0, recommended)
}

// MemGetExportableGranularity is cuMemGetAllocationGranularity for pinned
// memory on device exportable as types.
func (l *library) MemGetExportableGranularity(device int, types HandleType, recommended bool) (uint64, error) {
	if err := l.driverReady(calls.CuMemGetAllocationGranularity); err != nil {
		return 0, err
	}
	which, option := "minimum", uintptr(0)
	if recommended {
		which, option = "recommended", 1
	}
	r := l.callMem(calls.CuMemGetAllocationGranularity, device, [2]Mem{structMem(pinnedOn(device, types))}, option)
	if r.code != 0 {
		return 0, l.fail(calls.CuMemGetAllocationGranularity, r, "(pinned on device %d%s, %s)", device, exportableAs(types), which)
	}
	return r.a, nil
}

// MemCreate is cuMemCreate of size bytes of pinned memory on device. Device
// becomes the one whose context the calls without a device use.
func (l *library) MemCreate(device int, size uint64) (PhysHandle, error) {
	return l.MemCreateExportable(device, size, 0)
}

// MemCreateExportable is cuMemCreate of size bytes of pinned memory on
// device, exportable as types. Device becomes the one whose context the
// calls without a device use.
func (l *library) MemCreateExportable(device int, size uint64, types HandleType) (PhysHandle, error) {
	if err := l.driverReady(calls.CuMemCreate); err != nil {
		return 0, err
	}
	r := l.callMem(calls.CuMemCreate, device, [2]Mem{structMem(pinnedOn(device, types))}, uintptr(size), 0)
	if r.code != 0 {
		return 0, l.fail(calls.CuMemCreate, r, "(%s, pinned on device %d%s)", bytesize.Format(size), device, exportableAs(types))
	}
	l.vmmDevice.Store(int64(device))
	return PhysHandle(r.a), nil
}

// exportableAs names the handle types of an allocation property, for
// messages: nothing for none.
func exportableAs(types HandleType) string {
	if types == 0 {
		return ""
	}
	return fmt.Sprintf(", exportable as %s", types)
}

// MemRelease is cuMemRelease.
func (l *library) MemRelease(h PhysHandle) error {
	if err := l.driverReady(calls.CuMemRelease); err != nil {
		return err
	}
	if r := l.call(calls.CuMemRelease, l.vmmDev(), uintptr(h)); r.code != 0 {
		return l.fail(calls.CuMemRelease, r, "(handle 0x%x)", uint64(h))
	}
	return nil
}

// MemAddressReserve is cuMemAddressReserve. A non-zero hint asks for that
// address; the result may differ.
func (l *library) MemAddressReserve(size, alignment uint64, hint DevicePtr) (DevicePtr, error) {
	if err := l.driverReady(calls.CuMemAddressReserve); err != nil {
		return 0, err
	}
	r := l.call(calls.CuMemAddressReserve, l.vmmDev(), uintptr(size), uintptr(alignment), uintptr(hint), 0)
	if r.code != 0 {
		return 0, l.fail(calls.CuMemAddressReserve, r, "(%s, alignment %s, hint %s)", bytesize.Format(size), bytesize.Format(alignment), hint)
	}
	return DevicePtr(r.a), nil
}

// MemAddressFree is cuMemAddressFree.
func (l *library) MemAddressFree(p DevicePtr, size uint64) error {
	return l.onRange(calls.CuMemAddressFree, p, size)
}

// MemMap is cuMemMap: size bytes of h, from offset, at p.
func (l *library) MemMap(p DevicePtr, size, offset uint64, h PhysHandle) error {
	if err := l.driverReady(calls.CuMemMap); err != nil {
		return err
	}
	if r := l.call(calls.CuMemMap, l.vmmDev(), uintptr(p), uintptr(size), uintptr(offset), uintptr(h), 0); r.code != 0 {
		return l.fail(calls.CuMemMap, r, "(%s, %s, offset %s, handle 0x%x)", p, bytesize.Format(size), bytesize.Format(offset), uint64(h))
	}
	return nil
}

// MemUnmap is cuMemUnmap.
func (l *library) MemUnmap(p DevicePtr, size uint64) error {
	return l.onRange(calls.CuMemUnmap, p, size)
}

// MemSetAccess is cuMemSetAccess with one read-write CUmemAccessDesc per
// device, in one call.
func (l *library) MemSetAccess(p DevicePtr, size uint64, devices []int) error {
	if err := l.driverReady(calls.CuMemSetAccess); err != nil {
		return err
	}
	if len(devices) == 0 {
		return invalid(calls.CuMemSetAccess, "no device to give access to", "(%s, %s, no devices)", p, bytesize.Format(size))
	}
	desc := readWriteFor(devices)
	if r := l.callMem(calls.CuMemSetAccess, l.vmmDev(), [2]Mem{sliceMem(desc)}, uintptr(p), uintptr(size), uintptr(len(desc))); r.code != 0 {
		return l.fail(calls.CuMemSetAccess, r, "(%s, %s, read-write for devices %v)", p, bytesize.Format(size), devices)
	}
	return nil
}

// onRange makes driver call c on the range of size bytes at p
// (cuMemAddressFree, cuMemUnmap).
func (l *library) onRange(c calls.Call, p DevicePtr, size uint64) error {
	if err := l.driverReady(c); err != nil {
		return err
	}
	if r := l.call(c, l.vmmDev(), uintptr(p), uintptr(size)); r.code != 0 {
		return l.fail(c, r, "(%s, %s)", p, bytesize.Format(size))
	}
	return nil
}

// driverReady is the error of driver call c made now, if it cannot be.
func (l *library) driverReady(c calls.Call) error {
	if l.unusable() {
		return closedError(c)
	}
	if l.driverErr != nil {
		return fmt.Errorf("%s: %w", c, l.driverErr)
	}
	return nil
}

func (l *library) vmmDev() int { return int(l.vmmDevice.Load()) }
