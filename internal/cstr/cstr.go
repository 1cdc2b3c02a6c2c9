// Package cstr reads the C strings the CUDA libraries return (their error
// names and messages, static in the library), for the bindings that call
// them through purego. It is not part of a user's API.
package cstr

import "unsafe"

// Copy copies the NUL-terminated C string at p, which C owns and keeps for
// the life of the library; "" when p is 0.
func Copy(p uintptr) string {
	if p == 0 {
		return ""
	}
	// Reinterpreting the integer's storage, rather than converting it,
	// tells vet that the address comes from C, not from a Go pointer.
	s := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(s, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(s), n))
}
