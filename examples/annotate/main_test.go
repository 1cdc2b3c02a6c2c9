package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestEveryOrderOnTheFake(t *testing.T) {
	for _, order := range orders {
		for _, overflow := range []bool{false, true} {
			args := []string{"-runtime=fake", "-order=" + order}
			want := "every call succeeded"
			if overflow {
				args = append(args, "-overflow")
				want = `overflow caught: cudart: cudaDeviceSynchronize(device 0): cuLaunchKernel queued on stream 0x0 faulted when it ran (kernel fill writes 4097 bytes`
			}
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run(args, &out, &errOut), "%v: %s%s", args, out.String(), errOut.String())
			assert.Contains(t, out.String(), want, args)
			if overflow {
				assert.Contains(t, out.String(), `byte 0 past the end of "second" (4.0 KiB)`, args)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	clitest.Help(t, run, about, "-order")
	for _, args := range [][]string{{"-order=sideways"}, {"extra"}} {
		code, _, _ := clitest.Exit(run, args...)
		assert.Equal(t, 2, code, "%q", args)
	}
}
