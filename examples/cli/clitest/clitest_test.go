package clitest

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

// demo is an example as package cli makes them.
func demo(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("demo", "demo does things.", stderr)
	which := cmd.Runtime()
	n := cmd.Int("n", 1, "how many")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if *n < 1 {
		return cmd.Fail(2, "-n must be at least 1")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s, n %d\n", rt.Description, *n)
	return 0
}

func TestExitAndOK(t *testing.T) {
	code, stdout, stderr := Exit(demo, "-n", "0")
	if code != 2 || stdout != "" || stderr != "demo: -n must be at least 1\n" {
		t.Errorf("Exit: %d, %q, %q", code, stdout, stderr)
	}
	stdout, _ = OK(t, demo, "-runtime=fake", "-n", "3")
	if want := "runtime: fake"; len(stdout) < len(want) || stdout[:len(want)] != want {
		t.Errorf("OK: stdout %q", stdout)
	}
}

func TestHelp(t *testing.T) { Help(t, demo, "demo does things.", "-n", "-runtime") }

func TestWithoutCUDA(t *testing.T) {
	if os.Getenv("CUDAPOOL_CUDART") != "" {
		t.Skip("CUDAPOOL_CUDART is set")
	}
	WithoutCUDA(t, demo)
}

// recorder is a testing.TB that notes a failure instead of reporting it,
// stopping its goroutine on Fatal as testing does.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

// fails says whether check fails its TB.
func fails(t *testing.T, check func(testing.TB)) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failed
}

func TestTheChecksFail(t *testing.T) {
	loud := func(args []string, stdout, stderr io.Writer) int {
		fmt.Fprintln(stdout, "help!")
		return demo(args, stdout, stderr)
	}
	for name, check := range map[string]func(testing.TB){
		"OK of a bad flag":       func(tb testing.TB) { OK(tb, demo, "-n", "0") },
		"Help with another text": func(tb testing.TB) { Help(tb, demo, "demo does other things.") },
		"Help of a missing flag": func(tb testing.TB) { Help(tb, demo, "demo does things.", "-m") },
		"Help on stdout":         func(tb testing.TB) { Help(tb, loud, "demo does things.") },
	} {
		if !fails(t, check) {
			t.Errorf("%s passed", name)
		}
	}
}
