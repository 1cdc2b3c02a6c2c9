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
	pkgs, _, err := deps(format, args)
	return pkgs, err
}

// deps is Deps, and the module's directory.
func deps(format string, args []string) (pkgs []string, dir string, err error) {
	gobin, dir, err := module()
	if err != nil {
		return nil, "", err
	}
	out, err := exec.Command(gobin, append([]string{"list", "-deps", "-f", format}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, "", fmt.Errorf("golist: go list -deps %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, "", fmt.Errorf("golist: go list -deps %s: %w", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out)), dir, nil
}

// module is the go command and the directory of the module, which the
// working directory must be inside; its error wraps ErrUnavailable.
func module() (gobin, dir string, err error) {
	gobin, err = exec.LookPath("go")
	if err != nil {
		return "", "", fmt.Errorf("%w: no go command: %v", ErrUnavailable, err)
	}
	// Outside any module, go list -m prints "command-line-arguments".
	if out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output(); err == nil {
		for line := range strings.Lines(string(out)) {
			if path, dir, ok := strings.Cut(strings.TrimSpace(line), " "); ok && path == Module {
				return gobin, dir, nil
			}
		}
	}
	return "", "", fmt.Errorf("%w: the working directory is not inside module %s", ErrUnavailable, Module)
}

// DepsT is Deps for a test: it skips t, with Deps's reason, where go list
// cannot list the module, and fails t on any other error. It also stats
// every Go file and go.mod of the module (Watch), so that go test's cache
// reruns the test after any of them changes: go test cannot see what the
// go list it runs read.
func DepsT(t testing.TB, format string, args ...string) []string {
	t.Helper()
	pkgs, dir, err := deps(format, args)
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err == nil {
		_, err = watch(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// Watch stats every .go file and go.mod of the module that holds the
// working directory, for go test's cache to record, and returns how many.
func Watch() (int, error) {
	_, dir, err := module()
	if err != nil {
		return 0, err
	}
	return watch(dir)
}

// watch is Watch of the module in root.
func watch(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
