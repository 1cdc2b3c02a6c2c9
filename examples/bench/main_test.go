package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-runtime=fake", "-n", "200", "-reps", "3"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "median of 3 rounds (fake runtime: not a GPU timing)")
	for i, m := range []string{"cudapool Want+Satisfy", "cudaMalloc", "cudaMallocAsync cold", "cudaMallocAsync warm"} {
		assert.Contains(t, out.String(), m)
		assert.Contains(t, errOut.String(), fmt.Sprintf("bench: [%d/4] %s, 3 rounds\n", i+1, m), "progress on stderr")
	}
}

func TestBenchRefusesBadCounts(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-runtime=fake", "-n", "0"}, &out, &errOut))
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.True(t, strings.HasPrefix(errOut.String(), about+"\n\nFlags:\n"), "%s", errOut.String())
	assert.Contains(t, errOut.String(), "-runtime")
}
