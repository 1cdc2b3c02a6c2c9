//go:build !linux

package pinned

// adviseHugePages does nothing: transparent huge pages are Linux's. The
// memory still works, in the platform's base pages.
func adviseHugePages([]byte, bool) error { return nil }
