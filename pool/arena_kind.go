package pool

// Arena names one of the pool's arenas.
type Arena uint8

const (
	// Device is the arena in GPU memory (cudaMalloc).
	Device Arena = iota
	// Host is the arena in pinned host memory (cudaMallocHost).
	Host
	// Managed is the arena in unified memory (cudaMallocManaged), which
	// migrates between the device and the host; see Buffer.Prefetch.
	Managed

	numArenas
)

// String returns "device", "host" or "managed".
func (a Arena) String() string {
	switch a {
	case Host:
		return "host"
	case Managed:
		return "managed"
	}
	return "device"
}
