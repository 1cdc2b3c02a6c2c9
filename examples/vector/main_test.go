package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestVectorOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake", "-max", "256MiB", "-step", "16MiB", "-probe", "512MiB", "-reps", "3")
	assert.Contains(t, s, "median of 3 rounds (fake runtime: not a GPU timing)")
	assert.Contains(t, stderr, "vector: the largest buffer vmem reaches\n", "progress on stderr")
	assert.Contains(t, s, "runtime: fake")
	assert.Contains(t, s, "2.0 MiB -> 256 MiB (7 doublings)")
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+realloc\s+\S+\s+23\s+-\s*$`), s,
		"realloc: 1 cudaMalloc, then a cudaMalloc, cudaMemcpy and cudaFree per doubling, and a synchronisation")
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+vmem\s+\S+\s+33\s+0\s*$`), s,
		"vmem: the first growth 4 calls, then 4 per doubling (hinted reserve, create, map, access), and a synchronisation")
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+realloc\s+512 MiB\s+\S+\s+32\s+reached -probe 512 MiB\s*$`), s)
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+vmem\s+512 MiB\s+\S+\s+32\s+reached -probe 512 MiB\s*$`), s)
}

func TestVectorNeverAsksForMoreThanIsFree(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		from, max, avail, to uint64
		n                    int
	}{
		{"max fits", 2 << 20, 32 << 20, 1 << 30, 32 << 20, 4},
		{"clamped: realloc's last step holds 1.5 times the size", 2 << 20, 1 << 30, 95 << 20, 32 << 20, 4},
		{"exactly enough", 2 << 20, 1 << 30, 48 << 20, 32 << 20, 4},
		{"max between doublings", 2 << 20, 33 << 20, 1 << 30, 32 << 20, 4},
		{"nothing to double", 2 << 20, 2 << 20, 1 << 30, 2 << 20, 0},
		{"from does not fit", 2 << 20, 32 << 20, 1 << 20, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, n := doublingTarget(tc.from, tc.max, tc.avail)
			assert.Equal(t, tc.to, to)
			assert.Equal(t, tc.n, n)
		})
	}
}

func TestVectorProbeStopsAtFreeMemory(t *testing.T) {
	f := cudarttest.NewFake(cudarttest.WithDeviceMemory(1 << 30))
	var out bytes.Buffer
	c := config{from: 2 << 20, max: 1 << 30, step: 64 << 20, margin: 64 << 20, reps: 1, budget: 1 << 62}
	require.NoError(t, compare(&counting{Full: f}, c, &out, io.Discard))
	s := out.String()
	assert.Contains(t, s, "2.0 MiB -> 512 MiB (8 doublings) (clamped from 1.0 GiB: realloc's last step holds 768 MiB)",
		"1 GiB would need 1.5 GiB at realloc's last step; 512 MiB needs 768 MiB of the 960 MiB available")
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+realloc\s+512 MiB\s+50\.0%\s+8\s+next step needs 576 MiB \+ 64 MiB margin, 512 MiB free\s*$`), s)
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+vmem\s+960 MiB\s+93\.8%\s+15\s+next step needs 64 MiB \+ 64 MiB margin, 64 MiB free\s*$`), s)
	assert.NoError(t, f.CheckLeaks(), "every path gives back what it took")
}

func TestVectorRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-runtime=opencl"},
		{"-max", "lots"},
		{"-step", "0"},
		{"-from", "64MiB", "-max", "32MiB"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		assert.NotZero(t, code, strings.Join(args, " "))
		assert.NotEmpty(t, errOut.String())
	}
}

func TestVectorCUDAWithoutCUDAFailsWithTheLoadersMessage(t *testing.T) { clitest.WithoutCUDA(t, run) }

func TestMethodsFlagOrdersAndFilters(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-runtime=fake", "-methods", "vmem", "-no-probe", "-max", "64MiB", "-reps", "1"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "vmem")
	assert.NotContains(t, out.String(), "realloc")
	assert.NotContains(t, out.String(), "largest buffer reachable")

	out.Reset()
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-runtime=fake", "-methods", "copy"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown method "copy"`)
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
