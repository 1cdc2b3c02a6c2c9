package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/ptxcases"
)

// testPTXRefusal: ModuleLoadData refuses what the driver's JIT refuses
// (ptxcases, measured on a GPU): text that is not PTX with
// ErrInvalidImage, malformed headers, blocks, entries and parameter lists
// with ErrInvalidPTX, each error naming the line; and it loads the
// well-formed texts of the table, kernels or not.
func (s *suite) testPTXRefusal(t *testing.T, k cudart.Kernels) {
	for _, c := range ptxcases.Cases {
		m, err := k.ModuleLoadData(s.dev, c.PTX)
		switch {
		case c.Code == ptxcases.Loads && err != nil:
			t.Errorf("%s: %v", c.Name, err)
		case c.Code == ptxcases.Loads:
			if err := k.ModuleUnload(s.dev, m); err != nil {
				t.Errorf("%s: %s: %v", c.Name, calls.CuModuleUnload, err)
			}
		case err == nil:
			t.Errorf("%s: loaded, want code %d", c.Name, c.Code)
			if err := k.ModuleUnload(s.dev, m); err != nil {
				t.Errorf("%s: %s: %v", c.Name, calls.CuModuleUnload, err)
			}
		default:
			want := cudart.NewError("", cudart.Code(c.Code))
			if !errors.Is(err, want) {
				t.Errorf("%s: got %v, want %s", c.Name, err, want.Name)
			}
			if line := fmt.Sprintf("line %d", c.Line); !strings.Contains(err.Error(), line) {
				t.Errorf("%s: %v does not name %s", c.Name, err, line)
			}
		}
	}
	// The edges of the parameter space, not yet measured on a GPU: what
	// the runtime does is reported, not asserted (cudart/internal/ptx's
	// tests hold the fake to its rule).
	for _, c := range ptxcases.Edges {
		m, err := k.ModuleLoadData(s.dev, c.PTX)
		t.Logf("%s: %v (the rule says %d)", c.Name, err, c.Code)
		if err == nil {
			if err := k.ModuleUnload(s.dev, m); err != nil {
				t.Errorf("%s: %s: %v", c.Name, calls.CuModuleUnload, err)
			}
		}
	}
}
