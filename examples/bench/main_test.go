package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestBenchOnTheFake(t *testing.T) {
	stdout, stderr := clitest.OK(t, run, "-runtime=fake", "-n", "200", "-reps", "3")
	assert.Contains(t, stdout, "median of 3 rounds (fake runtime: not a GPU timing)")
	for i, m := range []string{"cudapool Want+Satisfy", "cudaMalloc", "cudaMallocAsync cold", "cudaMallocAsync warm"} {
		assert.Contains(t, stdout, m)
		assert.Contains(t, stderr, fmt.Sprintf("bench: [%d/4] %s, 3 rounds\n", i+1, m), "progress on stderr")
	}
}

func TestBenchRefusesBadCounts(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-runtime=fake", "-n", "0"}, &out, &errOut))
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
