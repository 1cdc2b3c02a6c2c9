package pool

import "github.com/cudapool/cudapool/cudart"

// arena is the memory behind one of the pool's arenas. Each kind is one type
// in a file named after it: fixedDevice, growableDevice, pinnedHost and
// managedArena. Its constructor reserves the memory; the ledger that places
// buffers in it is the same for every kind. The pool calls every method with
// its lock held, so an implementation needs no lock of its own.
type arena interface {
	// capacity is the most bytes buffers may use: the size reserved, or a
	// growable arena's address space.
	capacity() uint64
	// back makes bytes [0, end) usable before Satisfy places anything
	// there. If it fails, the arena is as it was.
	back(end uint64) error
	// device is the device address of byte 0, or 0 when no device can
	// address the arena.
	device() cudart.DevicePtr
	// host is the whole arena as host memory, or nil when the host cannot
	// address it.
	host() []byte
	// release runs in ReleaseAll, once no buffer remains placed.
	release() error
	// close frees the memory. If it fails, what could not be freed is kept
	// and the next close tries again; once it succeeds it does nothing.
	close() error
	// forget is close after a reset of the device, which freed the memory:
	// it gives back only what the reset left, and calls close's CUDA on
	// nothing the reset destroyed.
	forget() error
	// annotatable reports whether memory tools accept the arena as a heap
	// (cudart.Annotations).
	annotatable() bool
	// stats returns s with what only the arena knows filled in: the memory
	// behind it. By value, as a pointer through an interface call escapes.
	stats(s ArenaStats) ArenaStats
}
