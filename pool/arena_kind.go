package pool

import "github.com/cudapool/cudapool/internal/enum"

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

var arenaNames = enum.Table[Arena]{Names: []string{Device: "device", Host: "host", Managed: "managed"}, Unknown: "Arena(%d)"}

// String returns "device", "host" or "managed".
func (a Arena) String() string { return arenaNames.Name(a) }
