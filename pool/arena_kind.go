package pool

import "strconv"

// Arena names one of the pool's arenas.
type Arena uint8

const (
	// Device is the arena in GPU memory (cudaMalloc, or CUDA virtual memory
	// with WithGrowableDevice).
	Device Arena = iota
	// Host is the arena in pinned host memory (huge pages registered with
	// cudaHostRegister by default; see WithHostPinning).
	Host
	// Managed is the arena in unified memory (cudaMallocManaged), which
	// migrates between the device and the host; see Buffer.Prefetch.
	Managed

	numArenas
)

var arenaNames = [numArenas]string{Device: "device", Host: "host", Managed: "managed"}

// String returns "device", "host" or "managed".
func (a Arena) String() string {
	if a < numArenas {
		return arenaNames[a]
	}
	return "Arena(" + strconv.Itoa(int(a)) + ")"
}
