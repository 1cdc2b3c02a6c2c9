package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstartOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-runtime=fake"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	s := out.String()
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
	t.Setenv("CUDAPOOL_CUDART", "/nonexistent/libcudart.so")
	var out, errOut bytes.Buffer
	code := run([]string{"-runtime=cuda"}, &out, &errOut)
	if code == 0 {
		t.Skip("CUDA is present on this machine")
	}
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "/nonexistent/libcudart.so")
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.True(t, strings.HasPrefix(errOut.String(), about+"\n\nFlags:\n"), "%s", errOut.String())
	assert.Contains(t, errOut.String(), "-runtime")
}
