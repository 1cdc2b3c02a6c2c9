package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/cli/clitest"
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
	for _, tc := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{"-runtime=fake"}, map[string]string{"1000 1": "0", "1000 4096": "2097152", "1000 65536": "65011712", "20 1048577": "39845888", "20 3145728": "83886080"}},
		{[]string{"-runtime=fake", "-async"}, map[string]string{"1000 1": "0", "1000 4096": "0", "1000 65536": "33554432", "20 1048577": "0", "20 3145728": "33554432"}},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(tc.args, &out, &errOut), errOut.String())
		got := charged(out.String())
		assert.Len(t, got, len(rows), tc.args)
		for key, want := range tc.want {
			assert.Equal(t, want, got[key], "%v %s", tc.args, key)
		}
	}
}

func TestUsage(t *testing.T) {
	clitest.Help(t, run, about)
	code, _, _ := clitest.Exit(run, "-bogus")
	assert.Equal(t, 2, code)
}
