package cudart

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capabilityWords name the files of each capability: the binding's methods in
// cudart/<word>.go, the fake's in cudarttest/<word>.go and the suite's group
// in conformance/<word>.go, with <word>_<detail>.go beside them for the rest
// of the capability (kernels_context.go, graphs_memory.go). A reader looking
// for how the fake answers an Events call opens cudarttest/events.go.
var capabilityWords = map[calls.Capability]string{
	calls.CapRuntime:        "memory",
	calls.CapStreams:        "streams",
	calls.CapHostAllocator:  "host",
	calls.CapHostRegisterer: "host",
	calls.CapManaged:        "managed",
	calls.CapAsyncAllocator: "async",
	calls.CapDevice:         "device",
	calls.CapVirtualMemory:  "vmm",
	calls.CapKernels:        "kernels",
	calls.CapEvents:         "events",
	calls.CapGraphs:         "graphs",
}

// annotationsWord is Annotations', whose calls go to the NVTX tool, not
// through the call table.
const annotationsWord = "annotations"

// namedFiles are the packages that follow the scheme, each with the words
// of its files that are no capability.
var namedFiles = []struct {
	dir        string
	exceptions []string
}{
	// doc; the interfaces, the types and errors every capability shares
	// (runtime, abi, flags, errors, unwrap); the layers of a loaded Library:
	// library (the binding, what Open returns), registry (the handles it
	// gave out), backend (what makes a call), call (a call's C arguments)
	// and load and open (finding the libraries).
	{".", []string{"doc", "runtime", "abi", "flags", "errors", "unwrap", "library", "registry", "backend", "call", "load", "open"}},
	// doc; the Fake and its errors; calls (the table's names); open (Open
	// for tests); library (the hook a library's fake reaches the fake runtime
	// through); the test-control methods: faults, inspection and options.
	{"cudarttest", []string{"doc", "fake", "errors", "calls", "open", "library", "faults", "inspection", "options"}},
	// doc; suite (the runner, its options and groups).
	{"cudarttest/conformance", []string{"doc", "suite"}},
}

// TestFilesNamedByCapability: the files of cudart, the fake and the
// conformance suite are named after the capability they implement, with the
// same word in all three, or after one of a package's exceptions; and no
// file keeps a package's old prefix (lib_, fake_, suite_).
func TestFilesNamedByCapability(t *testing.T) {
	if _, err := os.Stat("runtime.go"); errors.Is(err, fs.ErrNotExist) {
		t.Skip("cudart's sources are not here: run from the repository")
	}
	words := []string{annotationsWord}
	for c := range calls.Count {
		if c.Capability() == calls.Binding {
			continue
		}
		w, ok := capabilityWords[c.Capability()]
		if !assert.True(t, ok, "capability %s (of %s) has no word in capabilityWords", c.Capability(), c) {
			continue
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	for _, pkg := range namedFiles {
		entries, err := os.ReadDir(pkg.dir)
		require.NoError(t, err)
		stems := map[string]bool{}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") {
				continue
			}
			stem := strings.TrimSuffix(strings.TrimSuffix(name, ".go"), "_test")
			for _, old := range []string{"lib_", "fake_", "suite_"} {
				assert.False(t, strings.HasPrefix(stem, old), "%s: the prefix %s is gone: name the file after its capability", filepath.Join(pkg.dir, name), old)
			}
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			stems[stem] = true
			word, _, _ := strings.Cut(stem, "_")
			assert.True(t, slices.Contains(words, word) || slices.Contains(pkg.exceptions, word),
				"%s: a file is named after a capability (%s) or one of the package's exceptions (%s)",
				filepath.Join(pkg.dir, name), strings.Join(words, ", "), strings.Join(pkg.exceptions, ", "))
		}
		for _, w := range words {
			assert.True(t, stems[w], "%s has no %s.go: each capability has its file in cudart, cudarttest and conformance", pkg.dir, w)
		}
		for _, x := range pkg.exceptions {
			assert.False(t, slices.Contains(words, x), "%s: exception %s is a capability word", pkg.dir, x)
		}
	}
}
