package pool

// Arena names one of the pool's two arenas.
type Arena uint8

const (
	// Device is the arena in GPU memory (cudaMalloc).
	Device Arena = iota
	// Host is the arena in pinned host memory (cudaMallocHost).
	Host
)

// String returns "device" or "host".
func (a Arena) String() string {
	if a == Host {
		return "host"
	}
	return "device"
}
