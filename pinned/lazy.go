package pinned

import "github.com/cudapool/cudapool/cudart"

// LazyRegisterer is implemented by a runtime whose HostRegister needs no
// resident pages, such as cudarttest's fake, which models registration
// without touching memory. The registering methods touch every page before
// cudaHostRegister so that the kernel backs them in parallel; for such a
// runtime they skip the touch, and memory is backed only when the caller
// uses it, whatever the method.
type LazyRegisterer interface {
	// HostRegisterIsLazy reports whether HostRegister leaves the pages as
	// they are; false makes Alloc touch them, as for real CUDA.
	HostRegisterIsLazy() bool
}

// needsTouch reports whether registering on rt gains from touching the
// pages first: always for real CUDA, which pins every page it registers.
func needsTouch(rt cudart.Runtime) bool {
	l, ok := rt.(LazyRegisterer)
	return !ok || !l.HostRegisterIsLazy()
}
