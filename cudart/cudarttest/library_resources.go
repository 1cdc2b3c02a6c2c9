package cudarttest

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// Resource is what a library's call makes on a device, for Make.
type Resource struct {
	Device int
	// Bytes is the device memory it takes outside any allocation the
	// program sees (a cuBLAS handle's 64 MiB): charged until it is freed or
	// its device reset.
	Bytes uint64
	// Call is the library's call that makes it ("cublasCreate"), and What
	// names it in leak reports ("cuBLAS handle"). Without What it is the
	// library's own upkeep (the kernels it loads into a context, memory it
	// keeps while it has handles): charged, but no leak, and not counted in
	// Usage.
	Call, What string
}

// resource is what Make made and neither Free nor a reset has ended.
type resource struct {
	Resource
	lib    *Library
	seq    int    // the runtime calls made before it
	origin origin // where it was made, on a fake that checks leaks
}

// libraryHandleBase is where the handles Make returns start: far from
// streams, events and the other handles of the fake.
const libraryHandleBase = 0xb_0000

// Make charges r's bytes to r's device and returns a handle for what r
// describes, never 0. Bytes that are not free fail it with
// cudaErrorMemoryAllocation, changing nothing, as does a device that does
// not work, as SetDevice. On a fake from NewFakeT it records where it was
// made, for CheckLeaks.
func (l *Library) Make(r Resource) (uintptr, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.usable(r.Device)
	if x == nil {
		x = f.charge(r.Device, r.Bytes)
	}
	if x != nil {
		return 0, x.errOf(fmt.Sprintf("%s (%s of device %d for %s)", r.Call, bytesize.Format(r.Bytes), r.Device, l.name))
	}
	if f.libs.resources == nil {
		f.libs.resources = make(map[uintptr]*resource)
	}
	f.libs.next += 0x10
	h := libraryHandleBase + f.libs.next
	res := &resource{Resource: r, lib: l, seq: f.seq}
	if f.origins != nil {
		res.origin = callerOrigin()
	}
	f.libs.resources[h] = res
	return h, nil
}

// Free gives back what Make charged for h and forgets h. It reports false,
// doing nothing, for a handle that is not live: freed already, destroyed by
// a reset of its device, or another library's.
func (l *Library) Free(h uintptr) bool {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.libs.resources[h]
	if r == nil || r.lib != l {
		return false
	}
	delete(f.libs.resources, h)
	f.devs[r.Device].used -= r.Bytes
	return true
}

// Live reports whether h, from the library's Make, is live: neither freed
// nor destroyed by a reset of its device.
func (l *Library) Live(h uintptr) bool {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.libs.resources[h]
	return r != nil && r.lib == l
}

// dropResources forgets device's resources, which a reset destroyed with
// their memory.
func (f *Fake) dropResources(device int) {
	for h, r := range f.libs.resources {
		if r.Device == device {
			delete(f.libs.resources, h)
		}
	}
}

// resourceLeaks reports each live handle of a library, for CheckLeaks.
func (f *Fake) resourceLeaks(add func(seq int, text, origin string)) {
	for h, r := range f.libs.resources {
		if r.What != "" {
			add(r.seq, fmt.Sprintf("%s 0x%x on device %d from %s, after %d runtime calls", r.What, h, r.Device, r.Call, r.seq), r.origin.String())
		}
	}
}

// libraryHandles counts the live handles of libraries, for Live.
func (f *Fake) libraryHandles() int {
	n := 0
	for _, r := range f.libs.resources {
		if r.What != "" {
			n++
		}
	}
	return n
}
