package cudart

import "fmt"

// DevicePtr is an address in a GPU's (unified) virtual address space. It is an
// integer on purpose: it never points at Go memory, and converting it to an
// unsafe.Pointer would let the garbage collector and checkptr see an address
// they cannot reason about.
type DevicePtr uintptr

// String formats the address in hex, as CUDA tools print it.
func (p DevicePtr) String() string { return fmt.Sprintf("0x%x", uintptr(p)) }

// Format prints p as the integer it is under the integer verbs (%x "1000",
// %#x "0x1000", %X, %d, with widths and flags), and as String does under %v
// and %s, in hex with its 0x. Without it, fmt would print String's text under
// every verb, so %x would give the hex of that text.
func (p DevicePtr) Format(f fmt.State, verb rune) {
	format := fmt.FormatString(f, verb)
	if verb == 'v' || verb == 's' {
		format = "%#" + fmt.FormatString(f, 'x')[1:]
	}
	fmt.Fprintf(f, format, uintptr(p))
}

// Add returns p advanced by n bytes.
func (p DevicePtr) Add(n uint64) DevicePtr { return p + DevicePtr(n) }

// Mem names one end of a copy: either a range of device memory or a slice of
// host memory. Host memory stays a []byte so that the garbage collector keeps
// it alive for the length of the call.
type Mem struct {
	dev  DevicePtr
	host []byte
	n    uint64
	isH  bool
}

// DeviceMem names n bytes of device memory starting at p. Memory returned by
// HostGetDevicePointer or MallocManaged is addressed this way too.
func DeviceMem(p DevicePtr, n uint64) Mem { return Mem{dev: p, n: n} }

// HostMem names the bytes of b, pinned or not.
func HostMem(b []byte) Mem { return Mem{host: b, n: uint64(len(b)), isH: true} }

// Len is the number of bytes m names.
func (m Mem) Len() uint64 { return m.n }

// IsHost reports whether m names host memory.
func (m Mem) IsHost() bool { return m.isH }

// Device is the device address of m; zero for host memory.
func (m Mem) Device() DevicePtr { return m.dev }

// Host is the host slice of m; nil for device memory.
func (m Mem) Host() []byte { return m.host }

// String describes m for error messages.
func (m Mem) String() string {
	if m.isH {
		return fmt.Sprintf("host[%d]", m.n)
	}
	return fmt.Sprintf("device %s[%d]", m.dev, m.n)
}
