package cudapool_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/choose"
)

// readmeMaxLines is the README's budget: a newcomer reads it in one sitting.
const readmeMaxLines = 250

// readme is README.md; a test binary run away from the repository (on a
// GPU host, from .gpu/) has none and skips.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("README.md is not here: run from the repository")
	}
	require.NoError(t, err)
	return string(b)
}

// goVersion is go.mod's go directive: the oldest Go the module builds with.
func goVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(b))
	require.NotNil(t, m, "go.mod has no go directive")
	return m[1]
}

func TestReadmeIsShortAndStatesTheOldestGo(t *testing.T) {
	text := readme(t)
	assert.LessOrEqual(t, strings.Count(text, "\n"), readmeMaxLines, "README.md lines")
	assert.Contains(t, text, "Go "+goVersion(t)+" or newer", "the README states go.mod's go directive")
	assert.Contains(t, text, "go"+goVersion(t), "the README names the toolchain CI tests on")
}

// goBlocks is the text of every ```go block of the README, in order; the
// first is a complete program.
func goBlocks(t *testing.T, text string) []string {
	t.Helper()
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```go\n(.*?)^```$").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	require.NotEmpty(t, blocks)
	require.True(t, strings.HasPrefix(blocks[0], "// Command ") && strings.Contains(blocks[0], "\npackage main\n"),
		"the first block is a complete program")
	return blocks
}

// TestReadmeGoBlocks copies every ```go block of the README into a module
// of its own, as a user would, and builds and vets them all; it runs the
// first, a complete program, and the test block, on the fake; and it checks
// that the test block fails on a one-byte overflow with no extra option.
func TestReadmeGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's programs with the go command")
	}
	text := readme(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the README's code with: %v", err)
	}
	repo, err := os.Getwd()
	require.NoError(t, err)

	blocks := goBlocks(t, text)

	mod := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(mod, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	// The repository's requirements and sums, so that the build needs no
	// network: the module cache has what the repository's own build fetched.
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	write("go.mod", regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(gomod), "module example.com/readme")+
		"\nrequire github.com/cudapool/cudapool v0.0.0\n\nreplace github.com/cudapool/cudapool => "+repo+"\n")
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	write("go.sum", string(sum))
	// The test block is the program's test, in the program's package: a user
	// copies both into one directory.
	testBlock := -1
	for i, b := range blocks {
		pkg := regexp.MustCompile(`(?m)^package (\w+)$`).FindStringSubmatch(b)
		require.NotNil(t, pkg, "block %d is not a whole Go file:\n%s", i+1, b)
		dir, name := "block"+string(rune('a'+i)), "code.go"
		if strings.Contains(b, "\nfunc Test") {
			dir, name, testBlock = "blocka", "code_test.go", i
		}
		write(filepath.Join(dir, name), b)
	}
	require.GreaterOrEqual(t, testBlock, 0, "the README shows a test")
	const fits, overflows = "make([]byte, 1000)", "make([]byte, 1001)"
	require.Contains(t, blocks[testBlock], fits)
	write("overflow/code.go", blocks[0])
	write("overflow/code_test.go", strings.Replace(blocks[testBlock], fits, overflows, 1))

	runtime, env := "fake", []string(nil)
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", choose.Env+"="+runtime)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("vet", "./...")
	require.NoError(t, err, "%s", out)
	out, err = run("run", "./blocka")
	require.NoError(t, err, "%s", out)
	assert.Contains(t, out, "runtime: fake")
	// The program honours the variable: "cuda" is CUDA or an error, never
	// the fake.
	runtime = "cuda"
	out, err = run("run", "./blocka")
	if rt, cudaErr := choose.Open("cuda"); cudaErr == nil {
		require.NoError(t, rt.Close())
		require.NoError(t, err, "%s", out)
		assert.Contains(t, out, "runtime: CUDA")
	} else {
		require.Error(t, err, "CUDAPOOL_RUNTIME=cuda with no usable CUDA fails:\n%s", out)
		assert.Contains(t, out, "CUDAPOOL_RUNTIME=cuda: CUDA is unusable")
	}
	runtime = "fake"
	out, err = run("test", "./blocka")
	require.NoError(t, err, "%s", out)
	// Each platform compiles the module anew (minutes on 2 cores, the first
	// time): make cross, which CI runs, asks for it.
	if os.Getenv(crossEnv) != "" {
		for _, p := range readmePlatforms(t, goCmd, text) {
			goos, goarch, _ := strings.Cut(p, "/")
			env = []string{"CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch}
			out, err = run("build", "-o", os.DevNull, "./blocka")
			require.NoError(t, err, "the README's program for %s with CGO_ENABLED=0:\n%s", p, out)
		}
		env = nil
	} else {
		t.Logf("%s unset: the README's platforms are not built (make cross builds them)", crossEnv)
	}
	out, err = run("test", "./overflow")
	require.Error(t, err, "a one-byte overflow fails the README's test:\n%s", out)
	assert.Contains(t, out, `it is byte 0 past the end of "weights" (1000 B)`)
}

// crossEnv, set, makes TestReadmeGoBlocks build the README's program for
// every platform the README names.
const crossEnv = "CUDAPOOL_CROSS"

// readmePlatforms is every GOOS/GOARCH pair the README names, in order,
// once each: the platforms it claims, which CI builds the program for.
func readmePlatforms(t *testing.T, goCmd, text string) []string {
	t.Helper()
	out, err := exec.Command(goCmd, "tool", "dist", "list").Output()
	require.NoError(t, err, "go tool dist list")
	known := strings.Fields(string(out))
	var platforms []string
	for _, p := range regexp.MustCompile(`\b[a-z0-9]+/[a-z0-9]+\b`).FindAllString(text, -1) {
		if slices.Contains(known, p) && !slices.Contains(platforms, p) {
			platforms = append(platforms, p)
		}
	}
	require.Contains(t, platforms, "linux/amd64", "the README names the platforms it runs on")
	return platforms
}
