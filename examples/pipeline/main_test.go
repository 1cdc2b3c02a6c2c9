package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestPipelineOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake", "-n", "10000", "-replays", "3")
	assert.Contains(t, s, "(5 rounds of 3 launches) (fake runtime: not a GPU timing)")
	assert.Contains(t, stderr, "pipeline: timing replays: round 5 of 5, 3 launches\n", "progress on stderr")
	assert.Contains(t, s, "run 1: graph launched; output matches the CPU")
	assert.Contains(t, s, "every buffer at the same address")
	assert.Contains(t, s, "run 2: graph replayed on new input; output matches the CPU")
	assert.Contains(t, s, "saved by lifetimes")
	assert.Contains(t, s, "(50%) saved", "x0 to x5 need 3 buffers at the busiest step, not 6")
}

func TestPipelineRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-replays", "-1"}, {"-runtime=opencl"}} {
		var out, errOut bytes.Buffer
		assert.NotEqual(t, 0, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
	}
}

func TestReferenceIsTheChain(t *testing.T) {
	got := reference([]float32{1, -2})
	// x1 = 3, x2 = -1.5, x3 = -0.5, x4 = 1, x5 = 2.75 for x0 = 1.
	assert.Equal(t, float32(2.75), got[0])
	// x1 = -3, x2 = -4.5, x3 = -6.5, x4 = 10, x5 = 9.5 for x0 = -2.
	assert.Equal(t, float32(9.5), got[1])
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
