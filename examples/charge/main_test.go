package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// charged maps "count size" to the charged-bytes column of each row.
func charged(out string) map[string]string {
	m := make(map[string]string)
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 12 && f[2] == "B" {
			m[f[0]+" "+f[1]] = f[7]
		}
	}
	return m
}

// TestChargeOnTheFake: the fake charges the rows as the GPU did (the
// figures of docs and the conformance suite's MallocCharge).
func TestChargeOnTheFake(t *testing.T) {
	for _, args := range [][]string{{"-runtime=fake"}, {"-runtime=fake", "-async"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errOut), errOut.String())
		got := charged(out.String())
		assert.Len(t, got, len(rows), args)
		for key, want := range map[string]string{"1000 1": "0", "1000 4096": "2097152", "1000 65536": "65011712", "20 1048577": "39845888", "20 3145728": "83886080"} {
			assert.Equal(t, want, got[key], "%v %s", args, key)
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "what cudaFree gives back")
	assert.Equal(t, 2, run([]string{"-bogus"}, &out, &errOut))
}
