//go:build !cgo

package cudart

// load cannot load anything without cgo.
func load(_, _ []string) (loaded, error) { return loaded{}, ErrNoCgo }
