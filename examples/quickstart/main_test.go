package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestQuickstartOnTheFake(t *testing.T) {
	s, _ := clitest.OK(t, run, "-runtime=fake")
	assert.Contains(t, s, "runtime: fake")
	assert.Contains(t, s, "output matches input")
	for _, name := range []string{"input.staging", "input", "conv1.out", "conv2.out", "output", "output.staging"} {
		assert.Contains(t, s, name)
	}
	assert.Contains(t, s, "device arena: 4.6 MiB used of 64 MiB (4 buffers); 5.7 MiB without sharing, 1.1 MiB saved by lifetimes",
		"input and output share conv1.out's bytes, never alive with it")
}

func TestQuickstartRefusesUnknownRuntime(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-runtime=opencl"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown runtime "opencl"`)
}

func TestQuickstartCUDAWithoutCUDAFailsWithTheLoadersMessage(t *testing.T) {
	clitest.WithoutCUDA(t, run)
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
