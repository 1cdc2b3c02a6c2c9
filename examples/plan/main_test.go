package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/cli/clitest"
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
		"no sharing              126 MiB (132,276,224 bytes, 13.",
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
	requireWellFormed(t, data)
}

// TestSummaryTotalsExact plans two tensors of 2^63 bytes that never meet:
// without sharing they would need 2^64 bytes, which the summary prints in
// full rather than wrapped to 0.
func TestSummaryTotalsExact(t *testing.T) {
	in := writeTrace(t, `{"model": "huge", "ops": 2, "tensors": [{"size": 9223372036854775808, "first": 0, "last": 0}, {"size": 9223372036854775808, "first": 1, "last": 1}]}`)
	code, out, errOut := runCmd("-in", in)
	require.Equal(t, 0, code, errOut)
	out = squash(out)
	assert.Contains(t, out, "arena 8.0 EiB (9,223,372,036,854,775,808 bytes)")
	assert.Contains(t, out, "no sharing 16 EiB (18,446,744,073,709,551,616 bytes, 2.0000x the lower bound)")
}

// TestHugeStepCounts draws plans whose steps reach math.MaxInt: the SVG
// must come out whole and small, with a thinned axis of labels that do
// not overlap, and -json must work as well.
func TestHugeStepCounts(t *testing.T) {
	tests := []struct {
		name, file, content string
	}{
		{"ops at MaxInt", "trace.json", `{"ops": 9223372036854775807, "tensors": [{"size": 256, "first": 0, "last": 0}]}`},
		{"last at MaxInt-1", "trace.json", `{"ops": 9223372036854775807, "tensors": [{"size": 256, "first": 0, "last": 9223372036854775806}, {"size": 512, "first": 9223372036854775806, "last": 9223372036854775806}]}`},
		{"CSV upper at MaxInt", "problem.csv", "id,lower,upper,size\n0,0,9223372036854775807,256\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), tt.file)
			require.NoError(t, os.WriteFile(in, []byte(tt.content), 0o644))
			svg := filepath.Join(t.TempDir(), "plan.svg")
			code, out, errOut := runCmd("-in", in, "-svg", svg)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, squash(out), "arena / lower bound 1.0000x")
			data, err := os.ReadFile(svg)
			require.NoError(t, err)
			assert.Less(t, len(data), 16<<10, "a few buffers and a bounded axis")
			labels := stepLabels(t, data)
			require.GreaterOrEqual(t, len(labels), 2)
			assert.LessOrEqual(t, len(labels), 8, "19-digit labels are thinned so as not to overlap")
			assert.Equal(t, uint64(0), labels[0])
			assert.True(t, slices.IsSorted(labels), "%v", labels)
			assert.LessOrEqual(t, labels[len(labels)-1], uint64(math.MaxInt)+1)

			code, out, errOut = runCmd("-in", in, "-json")
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, `"arena_bytes":`)
		})
	}
}

// squash turns every run of spaces into one, so that a test need not know
// the summary's column widths.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// stepLabels returns the numbers the SVG labels its step axis with: the
// texts centred under a tick.
func stepLabels(t *testing.T, data []byte) []uint64 {
	t.Helper()
	var labels []uint64
	dec := xml.NewDecoder(bytes.NewReader(data))
	inLabel := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return labels
		}
		require.NoError(t, err, "the SVG must be well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			inLabel = tok.Name.Local == "text" && slices.ContainsFunc(tok.Attr, func(a xml.Attr) bool {
				return a.Name.Local == "text-anchor" && a.Value == "middle"
			})
		case xml.CharData:
			if n, err := strconv.ParseUint(string(tok), 10, 64); inLabel && err == nil {
				labels = append(labels, n)
			}
		case xml.EndElement:
			inLabel = false
		}
	}
}

func TestStepTick(t *testing.T) {
	for _, steps := range []uint64{0, 1, 12, 13, 346, 99999, 1 << 31, math.MaxInt, math.MaxInt + 1, math.MaxUint64} {
		tick := stepTick(steps)
		require.Positive(t, tick, "steps %d", steps)
		ticks := steps/tick + 1
		assert.LessOrEqual(t, ticks, uint64(13), "steps %d: tick %d", steps, tick)
		if steps >= 1000 {
			assert.GreaterOrEqual(t, ticks, uint64(4), "steps %d: tick %d", steps, tick)
		}
		hi, _ := bits.Mul64(steps/tick, tick)
		assert.Zero(t, hi, "the last tick fits in 64 bits")
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
		{"zero unit", []string{"-in", resnet, "-unit", "0"}, exitUsage, "usage: plan [-in trace.json|problem.csv]"},
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

// TestDefaultFlags: with no flags the command plans the embedded trace,
// says so on stderr, and prints the same plan as -in on the file it copies,
// which it must stay byte-for-byte equal to.
func TestDefaultFlags(t *testing.T) {
	const original = "../../plan/testdata/traces/alexnet.json"
	want, err := os.ReadFile(original)
	require.NoError(t, err)
	require.Equal(t, string(want), string(embeddedTrace), "alexnet.json is a copy of %s", original)

	code, out, errOut := runCmd()
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "plan: no -in given: planning the embedded alexnet.json (embedded) (-in plans your own trace or CSV)\n", errOut)
	assert.Contains(t, out, "model                   alexnet")
	assert.Contains(t, out, "tensors                 15 over 23 ops")

	code, out, errOut = runCmd("-json")
	require.Equal(t, 0, code, errOut)
	code, fromFile, errFile := runCmd("-in", original, "-json")
	require.Equal(t, 0, code, errFile)
	assert.Equal(t, fromFile, out)
	assert.Empty(t, errFile, "-in says nothing on stderr")
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
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-in") }
