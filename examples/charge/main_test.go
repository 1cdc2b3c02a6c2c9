package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChargeOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "runtime: fake")
	assert.Contains(t, out.String(), "returned")
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "what cudaFree gives back")
	assert.Equal(t, 2, run([]string{"-bogus"}, &out, &errOut))
}
