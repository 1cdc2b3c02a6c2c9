package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli/clitest"
	"github.com/cudapool/cudapool/pool"
)

// rows maps "bug detector" to the rest of its row of the table.
func rows(out string) map[string]string {
	m := make(map[string]string)
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) >= 3 && slices.Contains(bugNames(), f[0]) {
			m[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
		}
	}
	return m
}

func TestEveryBugIsCaughtOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake"}, &out, &errOut), "%s%s", out.String(), errOut.String())
	got := rows(out.String())
	// Memcheck names the registered buffer nearest the bad byte: at step 1
	// activations is not registered, and after ReleaseAll nothing is.
	want := map[string][]string{
		"overflow guards":   {`"weights" (4.0 KiB): byte 0 past its end is 0x01`},
		"overflow memcheck": {`byte 0 past the end of "weights" (4.0 KiB)`, "cudaErrorIllegalAddress"},
		"lifetime guards":   {"read ReleasedPoison (0xdd) instead of the data"},
		"lifetime memcheck": {"kernel copy reads 4096 bytes", `past the end of "out" (4.0 KiB)`, "cudaErrorIllegalAddress"},
		"released guards":   {"read ReleasedPoison (0xdd) instead of the data"},
		"released memcheck": {"kernel copy reads 4096 bytes", `"cudapool device arena (device 0)", which has no registered buffer`, "cudaErrorIllegalAddress"},
		"padding guards":    {`"scratch" (100 B): byte 0 past its end is 0x01`},
		"padding memcheck":  {`byte 0 past the end of "scratch" (100 B)`, "cudaErrorIllegalAddress"},
	}
	assert.Len(t, got, len(want), "a row for each bug and detector")
	for key, parts := range want {
		row := got[key]
		assert.True(t, strings.HasPrefix(row, "yes "), "%s: %s", key, row)
		for _, p := range parts {
			assert.Contains(t, row, p, key)
		}
	}
	assert.Contains(t, out.String(), "every bug was caught by every detector asked for")
}

func TestNoDetectorRunsTheBugsSilently(t *testing.T) {
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-detector=none")
	assert.Equal(t, len(bugs), strings.Count(stdout, "ran; nothing in the program checks it (run under compute-sanitizer)"))
	assert.NotContains(t, stdout, " yes ")
}

// Under compute-sanitizer the bad access faults even with -detector none;
// the fake's memcheck stands in for it.
func TestNoDetectorReportsAFaultFromOutside(t *testing.T) {
	r, err := try(cudarttest.NewFake(cudarttest.WithMemcheck()), bugs[0], "none")
	require.NoError(t, err)
	assert.False(t, r.missed())
	assert.Contains(t, r.how, "faulted, so a tool outside the program stopped it")
	assert.Contains(t, r.how, `past the end of "weights" (4.0 KiB)`)
}

func TestOneBugOneDetector(t *testing.T) {
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-bug=padding", "-detector=memcheck")
	got := rows(stdout)
	assert.Len(t, got, 1)
	assert.Contains(t, got["padding memcheck"], `"scratch" (100 B)`)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-bug=underflow"},
		{"-detector=valgrind"},
		{"-runtime=opencl"},
		{"-runtime=cuda", "-detector=memcheck"},
		{"-frobnicate"},
		{"overflow"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errOut), "%v", args)
		assert.NotEmpty(t, errOut.String(), "%v", args)
	}
}

// Without a fault every run gives back all it took: NewFakeT fails the test
// on a leak. Its memcheck is off: the bugs are deliberate, and a fault would
// stop the run before it frees.
func TestRunsLeakNothing(t *testing.T) {
	for _, b := range bugs {
		for _, d := range []string{"guards", "none"} {
			_, err := try(cudarttest.NewFakeT(t, cudarttest.WithoutMemcheck()), b, d)
			require.NoError(t, err, "%s %s", b.name, d)
		}
	}
}

// A stale read of bytes a live buffer now holds is a read of that buffer as
// far as addresses go: no detector here sees it, which is why lifetime leaves
// a step between activations and logits.
func TestReadOfBytesReusedAtOnceIsMissed(t *testing.T) {
	reused := bug{name: "reused", reads: true, do: func(e *env) ([]byte, error) {
		const size = 4096
		act, err := e.p.WantDevice(size, pool.Name("activations"), pool.Live(0, 0))
		require.NoError(t, err)
		_, err = e.p.WantDevice(size, pool.Name("logits"), pool.Live(1, 1))
		require.NoError(t, err)
		out, err := e.p.WantDevice(size, pool.Name("out"))
		require.NoError(t, err)
		src, err := e.place(act)
		require.NoError(t, err)
		dst, err := out.Ptr()
		require.NoError(t, err)
		require.NoError(t, e.p.Step(0))
		require.NoError(t, e.fill(src, size, data))
		require.NoError(t, e.p.Step(1))
		if err := e.bad(e.copyBytes(dst, src, size)); err != nil {
			return nil, err
		}
		return e.read(dst, size)
	}}
	r, err := try(cudarttest.NewFakeT(t), reused, "guards")
	require.NoError(t, err)
	assert.True(t, r.missed())
	assert.Contains(t, r.how, "read the data written (0x5a)")
	r, err = try(cudarttest.NewFakeT(t), reused, "memcheck")
	require.NoError(t, err)
	assert.True(t, r.missed())
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
