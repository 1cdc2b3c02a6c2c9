package clitest

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// Run is an example's run: what cli.Main runs with the program's arguments
// and standard streams.
type Run func(args []string, stdout, stderr io.Writer) int

// Exit runs run with args: its exit status, and what it wrote to stdout
// and stderr.
func Exit(run Run, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// OK runs run with args, stopping t unless it exits 0, and returns what it
// wrote to stdout and stderr.
func OK(t testing.TB, run Run, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := Exit(run, args...)
	if code != 0 {
		t.Fatalf("%q: exit status %d, want 0; stderr:\n%s\nstdout:\n%s", args, code, stderr, stdout)
	}
	return stdout, stderr
}

// Help checks -h: exit status 0, nothing on stdout, and on stderr about,
// a blank line, "Flags:" and the flags, each of flags among them.
func Help(t testing.TB, run Run, about string, flags ...string) {
	t.Helper()
	stdout, stderr := OK(t, run, "-h")
	if stdout != "" {
		t.Errorf("-h wrote to stdout:\n%s", stdout)
	}
	flagsText, ok := strings.CutPrefix(stderr, about+"\n\nFlags:\n")
	if !ok {
		t.Fatalf("-h: want what the program does, then its flags; got:\n%s", stderr)
	}
	for _, f := range flags {
		if !strings.Contains(flagsText, "\n  "+f) && !strings.HasPrefix(flagsText, "  "+f) {
			t.Errorf("-h lists no flag %s:\n%s", f, flagsText)
		}
	}
}

// WithoutCUDA checks that -runtime=cuda, where the CUDA runtime does not
// load (CUDAPOOL_CUDART naming no file), exits 1 naming the library it
// tried. It skips t where the run succeeds: CUDA was found all the same.
func WithoutCUDA(t testing.TB, run Run) {
	t.Helper()
	const missing = "/nonexistent/libcudart.so"
	t.Setenv("CUDAPOOL_CUDART", missing)
	code, _, stderr := Exit(run, "-runtime=cuda")
	if code == 0 {
		t.Skip("CUDA is present on this machine")
	}
	if code != 1 || !strings.Contains(stderr, missing) {
		t.Errorf("-runtime=cuda without CUDA: exit status %d (want 1) and stderr naming %s:\n%s", code, missing, stderr)
	}
}
