package conformance_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestConformanceFakeMakesEveryCallOfTheTable: the conformance suite, run on the
// fake, makes every call of cudart's table but the binding's own, and
// nothing else, so no name can drift between the binding, the fake and the
// suite; and FailCall accepts every one of those names. Two devices make
// the suite ask about peers.
func TestConformanceFakeMakesEveryCallOfTheTable(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	conformance.TestRuntime(t, f)
	made := map[string]bool{}
	for _, name := range f.Calls() {
		c, err := calls.Lookup(name)
		require.NoError(t, err, "the fake recorded a call outside the table")
		assert.NotEqual(t, calls.Binding, c.Capability(), "%s is the binding's own", c)
		made[name] = true
	}
	for _, c := range calls.All() {
		if c.Capability() == calls.Binding {
			continue
		}
		assert.True(t, made[c.String()], "the suite never makes %s (%s)", c, c.Capability())
		assert.NoError(t, f.FailCall(c.String(), 999), "FailCall(%q)", c)
	}
	f.ClearFaults()
}
