package conformance

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/opt"
)

// A library's groups run after the suite's own and before Reset, in the
// order given, on the suite's device.
func TestGroupsRunBeforeReset(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	var ran []string
	group := func(name string) Group {
		return Group{Name: name, Run: func(t *testing.T, rt cudart.Runtime, device int) {
			assert.True(t, rt == cudart.Runtime(f), "the suite's runtime")
			assert.Equal(t, 1, device, "the suite's device")
			assert.Zero(t, f.DeviceResets(device), "no reset before the group")
			ran = append(ran, name)
		}}
	}
	TestRuntime(t, f, OnDevice(1), WithGroups(group("First"), group("Second")))
	assert.Equal(t, []string{"First", "Second"}, ran)
	assert.Positive(t, f.DeviceResets(1), "Reset ran after them")
}

// A group with no name or no Run is refused.
func TestWithGroupsRefusesAnIncompleteGroup(t *testing.T) {
	run := func(*testing.T, cudart.Runtime, int) {}
	for _, g := range []Group{{Run: run}, {Name: "NoRun"}} {
		err := opt.Configure(&config{}, []Option{WithGroups(Group{Name: "Fine", Run: run}, g)}, ErrInvalidOption)
		require.ErrorIs(t, err, ErrInvalidOption, "%+v", g)
		t.Log(err)
	}
}
