package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestSoakOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake", "-cycles", "2000", "-buffers", "32", "-check-every", "100")
	assert.Contains(t, s, "elapsed (fake runtime: not a GPU timing)")
	assert.Contains(t, stderr, "soak: cycle 2000 of 2000: ", "a progress line a sample, on stderr")
	assert.Contains(t, s, "runtime: fake")
	assert.Contains(t, s, "pool.New: pool: reserve 81 GiB device arena on device 0")
	assert.Contains(t, s, "cudaErrorMemoryAllocation")
	assert.Contains(t, s, "after: unchanged")
	assert.Contains(t, s, `Satisfy: pool: arena exhausted (device): need 80 MiB, have 64 MiB; largest pending: "weights" 40 MiB`)
	assert.Contains(t, s, "cycles: 2000 x 32 buffers on a fixed 256 MiB device arena")
	assert.Contains(t, s, "free device memory: largest drift 0 B")
	assert.Contains(t, s, "PASS")
	// Ten samples, from the first cycle to the last.
	var rows []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "0" || f[0] == "1999" || f[0] == "222") {
			rows = append(rows, f[0])
		}
	}
	assert.Equal(t, []string{"0", "222", "1999"}, rows)
}

func TestSoakGrowableTrimmedOnTheFake(t *testing.T) {
	s, _ := clitest.OK(t, run, "-runtime=fake", "-cycles", "500", "-buffers", "16", "-growable", "-trim")
	assert.Contains(t, s, "growable arena of 81 GiB, Satisfy of 81 GiB: pool: grow the device arena")
	assert.Contains(t, s, "cudaErrorMemoryAllocation")
	assert.Contains(t, s, "growable, trimmed at every ReleaseAll,")
	assert.Contains(t, s, "PASS")
}

func TestSoakRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"-cycles", "-1"}, 2},
		{[]string{"-buffers", "1"}, 2},
		{[]string{"-samples", "1"}, 2},
		{[]string{"-check-every", "0"}, 2},
		{[]string{"-device-mib", "0"}, 2},
		{[]string{"-trim"}, 2},
		{[]string{"-no-such-flag"}, 2},
		{[]string{"-runtime=opencl"}, 1},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, tt.code, run(append([]string{"-runtime=fake"}, tt.args...), &out, &errOut))
			assert.NotEmpty(t, errOut.String())
		})
	}
}

func TestJudge(t *testing.T) {
	const mib = 1 << 20
	c := config{freeTolerance: 2 * mib, rssLimit: 16 * mib}
	tests := []struct {
		name    string
		samples []sample
		fail    string // "" when within the limits
	}{
		{"flat", []sample{{0, 80 * mib, 70 * mib}, {1, 80 * mib, 71 * mib}}, ""},
		{"free memory within tolerance", []sample{{0, 80 * mib, 70 * mib}, {1, 78 * mib, 70 * mib}}, ""},
		{"free memory drifted", []sample{{0, 80 * mib, 70 * mib}, {1, 80 * mib, 70 * mib}, {2, 77 * mib, 70 * mib}}, "free device memory drifted by 3.0 MiB"},
		{"free memory grew back too is drift", []sample{{0, 80 * mib, 70 * mib}, {1, 84 * mib, 70 * mib}}, "drifted by 4.0 MiB"},
		{"RSS grew past the limit", []sample{{0, 80 * mib, 70 * mib}, {1, 80 * mib, 80 * mib}, {2, 80 * mib, 90 * mib}}, "the resident set grew by 20 MiB"},
		{"RSS shrinking is fine", []sample{{0, 80 * mib, 90 * mib}, {1, 80 * mib, 70 * mib}}, ""},
		{"RSS unknown", []sample{{0, 80 * mib, 0}, {1, 80 * mib, 0}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := judge(tt.samples, c, io.Discard)
			if tt.fail == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.fail)
			}
		})
	}
}

func TestSamplePoints(t *testing.T) {
	assert.Equal(t, []int{0, 222, 444, 666, 888, 1110, 1332, 1554, 1776, 1999}, samplePoints(2000, 10))
	assert.Equal(t, []int{0, 1, 2, 3, 4}, samplePoints(5, 10), "never a cycle twice")
	assert.Equal(t, []int{0}, samplePoints(1, 10))
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
