// Package golist runs `go list` for the module's tests that check what a
// package links. A test binary can run where the module is not: on a GPU
// host with no go command, or from another directory. There go list cannot
// answer for this module, and Deps says so with ErrUnavailable, for the
// test to use what make gpu recorded or to skip, never to fail.
package golist

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Module is this module's path, which the working directory must be inside.
const Module = "github.com/cudapool/cudapool"

// ErrUnavailable: no go command, or the working directory is outside the
// module.
var ErrUnavailable = errors.New("golist: go list cannot list this module here")

// Deps is `go list -deps -f format args...` run in the working directory,
// one field a line split on white space. Its error wraps ErrUnavailable,
// saying why, where no go command is installed or the working directory is
// not inside the module.
func Deps(format string, args ...string) ([]string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: no go command: %v", ErrUnavailable, err)
	}
	// Outside any module, go list -m prints "command-line-arguments".
	mods, err := exec.Command(gobin, "list", "-m").Output()
	if err != nil || !slices.Contains(strings.Fields(string(mods)), Module) {
		return nil, fmt.Errorf("%w: the working directory is not inside module %s", ErrUnavailable, Module)
	}
	out, err := exec.Command(gobin, append([]string{"list", "-deps", "-f", format}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("golist: go list -deps %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("golist: go list -deps %s: %w", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out)), nil
}

// DepsT is Deps for a test: it skips t, with Deps's reason, where go list
// cannot list the module, and fails t on any other error. It also stats
// every Go file and go.mod of the module (Watch), so that go test's cache
// reruns the test after any of them changes: go test cannot see what the
// go list it runs read.
func DepsT(t testing.TB, format string, args ...string) []string {
	t.Helper()
	pkgs, err := Deps(format, args...)
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err == nil {
		_, err = Watch()
	}
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// Watch stats every .go file and go.mod of the module that holds the
// working directory, for go test's cache to record, and returns how many.
func Watch() (int, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Module).Output()
	if err != nil {
		return 0, fmt.Errorf("golist: the module's directory: %w", err)
	}
	root, n := strings.TrimSpace(string(out)), 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != root && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir // .git, .gpu
		case d.IsDir() || !(strings.HasSuffix(p, ".go") || d.Name() == "go.mod"):
			return nil
		}
		n++
		_, err = os.Stat(p)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("golist: %w", err)
	}
	return n, nil
}
