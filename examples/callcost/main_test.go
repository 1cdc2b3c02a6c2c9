package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestCallCostOnTheFake(t *testing.T) {
	stdout, stderr := clitest.OK(t, run, "-runtime=fake", "-rounds", "3", "-calls", "100")
	assert.Contains(t, stdout, "(fake runtime: not a GPU timing)")
	assert.Contains(t, stderr, "callcost: timing cudaMemGetInfo(0), 3 rounds of 100 calls\n", "progress on stderr")
	for _, want := range []string{"runtime: fake", "build: ", "CGO_ENABLED=", "median ns/call", "cudaMemGetInfo(0)", "cudaMemcpy 4 B D2D", " 300 "} {
		assert.Contains(t, stdout, want)
	}
}

func TestCallCostRefusesBadCounts(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-runtime=fake", "-calls", "0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "must be at least 1")
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{1, 2, 9}))
	assert.Equal(t, 2.5, median([]float64{1, 2, 3, 9}))
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
