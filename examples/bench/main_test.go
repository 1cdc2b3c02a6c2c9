package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-runtime=fake", "-n", "200", "-reps", "3"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	for _, m := range []string{"cudapool Want+Satisfy", "cudaMalloc", "cudaMallocAsync cold", "cudaMallocAsync warm"} {
		assert.Contains(t, out.String(), m)
	}
}

func TestBenchRefusesBadCounts(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-runtime=fake", "-n", "0"}, &out, &errOut))
}
