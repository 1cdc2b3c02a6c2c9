package vmem

import (
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// addressPlan is the vector's address space after a reservation, before it
// is committed: a growth that fails later takes it back through its undo
// log, and the vector never sees it.
type addressPlan struct {
	ptr    cudart.DevicePtr
	ranges []addrRange
	// moved: the mapped segments are mapped again at ptr, and the old
	// mappings and ranges are to be given up on commit.
	moved bool
}

// planReserve reserves address space up to target bytes from the vector's
// start: first right after the current range (the fixed-address hint), which
// keeps Ptr; failing that, a new range of target bytes into which the
// mapped segments are mapped again.
func (v *Vector) planReserve(u *undoLog, target uint64) (addressPlan, error) {
	vm := v.p.vm
	if v.reserved == 0 {
		p, err := vm.MemAddressReserve(target, v.p.gran, 0)
		if err != nil {
			return addressPlan{}, err
		}
		u.push(func() error { return vm.MemAddressFree(p, target) })
		return addressPlan{ptr: p, ranges: []addrRange{{p, target}}}, nil
	}
	hint := v.ptr.Add(v.reserved)
	delta := target - v.reserved
	p, err := vm.MemAddressReserve(delta, v.p.gran, hint)
	if err == nil && p == hint {
		u.push(func() error { return vm.MemAddressFree(p, delta) })
		return addressPlan{ptr: v.ptr, ranges: append(slices.Clip(v.ranges), addrRange{p, delta})}, nil
	}
	if err == nil {
		// A range elsewhere cannot extend the vector; give it back now.
		if err := vm.MemAddressFree(p, delta); err != nil {
			v.p.later.later(func() error { return vm.MemAddressFree(p, delta) })
		}
	}
	return v.planMove(u, target)
}

// planMove reserves a new range of target bytes, maps every segment into it
// at its offset and grants access to what is mapped with one call. The old
// mappings stay, so the vector is intact until commit.
func (v *Vector) planMove(u *undoLog, target uint64) (addressPlan, error) {
	vm := v.p.vm
	p, err := vm.MemAddressReserve(target, v.p.gran, 0)
	if err != nil {
		return addressPlan{}, err
	}
	u.push(func() error { return vm.MemAddressFree(p, target) })
	for _, s := range v.p.segs {
		at := p.Add(s.off)
		if err := vm.MemMap(at, s.size, 0, s.h); err != nil {
			return addressPlan{}, err
		}
		u.push(func() error { return vm.MemUnmap(at, s.size) })
	}
	if size := v.p.mapped(); size > 0 {
		if err := vm.MemSetAccess(p, size, v.p.access); err != nil {
			return addressPlan{}, err
		}
	}
	return addressPlan{ptr: p, ranges: []addrRange{{p, target}}, moved: true}, nil
}

// commit makes plan the vector's address space, reserved bytes long. After a
// move it unmaps the segments from the old ranges and frees those; a cleanup
// that fails is retried later rather than failing a growth that is done.
func (v *Vector) commit(plan addressPlan, reserved uint64) {
	vm := v.p.vm
	if plan.moved {
		for _, s := range v.p.segs {
			at := v.ptr.Add(s.off)
			if err := vm.MemUnmap(at, s.size); err != nil {
				v.p.later.later(func() error { return vm.MemUnmap(at, s.size) })
			}
		}
		for _, r := range v.ranges {
			if err := vm.MemAddressFree(r.p, r.size); err != nil {
				v.p.later.later(func() error { return vm.MemAddressFree(r.p, r.size) })
			}
		}
	}
	v.ptr, v.ranges, v.reserved = plan.ptr, plan.ranges, reserved
}
