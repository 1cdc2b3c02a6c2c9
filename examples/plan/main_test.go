package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

const resnet = "../../plan/testdata/traces/resnet101.json"

// runCmd runs the command and returns its exit code and both outputs.
func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestSummary(t *testing.T) {
	code, out, errOut := runCmd("-in", resnet)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"model                   resnet101",
		"tensors                 212 over 346 ops",
		"arena                   9.2 MiB (",
		"lower bound             9.2 MiB (",
		"arena / lower bound     1.0000x",
		"no sharing              126 MiB (13.",
		"PyTorch peak allocated  ",
		"time taken              ",
	} {
		assert.Contains(t, out, want)
	}
	assert.Empty(t, errOut)
}

func TestJSON(t *testing.T) {
	code, out, errOut := runCmd("-in", resnet, "-json")
	require.Equal(t, 0, code, errOut)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.ElementsMatch(t, []string{"arena_bytes", "lower_bound", "offsets"}, keys(got))

	var res planJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	tr := readTestTrace(t, resnet)
	require.Len(t, res.Offsets, len(tr.Tensors))
	for i, off := range res.Offsets {
		assert.Zero(t, off%256, "offset %d", i)
	}
	require.NoError(t, plan.Validate(tr.Tensors, res.Offsets))
	lb, err := plan.LowerBound(tr.Tensors)
	require.NoError(t, err)
	assert.Equal(t, lb, res.LowerBound)
	assert.GreaterOrEqual(t, res.ArenaBytes, lb)
}

func TestJSONFromStdin(t *testing.T) {
	f, err := os.Open(resnet)
	require.NoError(t, err)
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	code, out, errOut := runCmd("-in", "-", "-json")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, `{"arena_bytes":`))
}

// TestSVG checks the drawing is well-formed XML with a rectangle per
// buffer, a title naming the model and the ratio, and labelled axes.
func TestSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.svg")
	code, out, errOut := runCmd("-in", resnet, "-svg", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "arena / lower bound")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	counts := map[string]int{}
	var texts []string
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG must be well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				assert.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			counts[tok.Name.Local]++
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	assert.Equal(t, "svg", root)
	assert.Equal(t, 212+1, counts["rect"], "a rectangle per buffer and the background")
	all := strings.Join(texts, "\n")
	assert.Contains(t, all, "resnet101: arena / lower bound = 1.0000x")
	assert.Contains(t, all, "step (op index)")
	assert.Contains(t, all, "offset in the arena")
	assert.Contains(t, all, "8.0 MiB", "the y axis is labelled in human sizes")
	assert.Contains(t, all, "tensor 17: ")
}

func TestSVGEscapesModelName(t *testing.T) {
	in := writeTrace(t, `{"model": "a<b & \"c\"", "ops": 2, "tensors": [{"size": 100, "first": 0, "last": 1}]}`)
	path := filepath.Join(t.TempDir(), "plan.svg")
	code, _, errOut := runCmd("-in", in, "-svg", path, "-json")
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
}

func TestRefusesBadTraces(t *testing.T) {
	tests := []struct {
		name, trace, message string
	}{
		{"not JSON", "this is not JSON", "line 1, column 2 (byte 1): invalid character 'h'"},
		{"truncated", `{"model": "m", "ops": 4, "tensors": [{"size": 10, "fi`, "unexpected end of JSON input"},
		{"negative size", `{"model": "m", "ops": 4, "tensors": [{"size": -10, "first": 0, "last": 1}]}`, "tensor 0: size (-10) is negative"},
		{"last before first", `{"model": "m", "ops": 9, "tensors": [{"size": 1, "first": 0, "last": 1}, {"size": 1, "first": 5, "last": 3}]}`, "tensor 1: last (3) < first (5)"},
		{"last past ops", `{"model": "m", "ops": 2, "tensors": [{"size": 1, "first": 0, "last": 2}]}`, "tensor 0: last (2) is not below ops (2)"},
		{"overflow", `{"model": "m", "ops": 2, "tensors": [{"size": 18446744073709551615, "first": 0, "last": 1}]}`, "does not round up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := writeTrace(t, tt.trace)
			code, out, errOut := runCmd("-in", in, "-json")
			assert.Equal(t, exitFailure, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, in+": ")
			assert.Contains(t, errOut, tt.message)
		})
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no input", nil, exitUsage, "usage: plan -in trace.json|problem.csv"},
		{"zero unit", []string{"-in", resnet, "-unit", "0"}, exitUsage, "usage:"},
		{"negative time limit", []string{"-in", resnet, "-time-limit", "-1s"}, exitUsage, "usage:"},
		{"capacity overflows", []string{"-in", resnet, "-unit", "256", "-capacity", "18446744073709551615"}, exitFailure, "overflows 64 bits"},
		{"unknown flag", []string{"-frobnicate"}, exitUsage, "flag provided but not defined"},
		{"stray argument", []string{"-in", resnet, "extra"}, exitUsage, "usage:"},
		{"missing file", []string{"-in", "no/such/trace.json"}, exitFailure, "no such file"},
		{"unwritable svg", []string{"-in", resnet, "-svg", "no/such/dir/out.svg"}, exitFailure, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCmd(tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

func writeTrace(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func readTestTrace(t *testing.T, path string) *plan.Trace {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := plan.ReadTrace(f)
	require.NoError(t, err)
	return tr
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.True(t, strings.HasPrefix(errOut.String(), about+"\n\nFlags:\n"), "%s", errOut.String())
	assert.Contains(t, errOut.String(), "-in")
}
