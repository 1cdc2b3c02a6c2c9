// Package enum names the values of the module's enumerated types (C enums
// of CUDA, cuBLAS and NCCL, and the module's own) from one table a type,
// so that every String method finds a name, and says what it cannot name,
// the same way.
package enum

import "fmt"

// Integer is the underlying type of an enumerated type.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Table names the values of T: v is Prefix+Names[v] where Names has a
// non-empty name at v, and otherwise Unknown formatted with v's number.
// Names is indexed by the values, so a keyed literal ([]string{A: "a"})
// leaves the gaps between sparse values unnamed.
type Table[T Integer] struct {
	Prefix  string
	Names   []string
	Unknown string // a format with one verb for the number, e.g. "cudaMemcpyKind(%d)"
}

// Name is v's name in t.
func (t *Table[T]) Name(v T) string {
	if v >= 0 && uint64(v) < uint64(len(t.Names)) && t.Names[v] != "" {
		return t.Prefix + t.Names[v]
	}
	// The number, not v, whose String may be the caller.
	if v < 0 {
		return fmt.Sprintf(t.Unknown, int64(v))
	}
	return fmt.Sprintf(t.Unknown, uint64(v))
}
