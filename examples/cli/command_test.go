package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/choose"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		exit     bool
		n        int
		stderr   []string // what stderr holds
		noStderr bool
	}{
		{name: "flags", args: []string{"-n", "3"}, n: 3, noStderr: true},
		{name: "none", n: 1, noStderr: true},
		{name: "help", args: []string{"-h"}, exit: true, stderr: []string{"demo does things.\n\nFlags:\n", "-n int", "how many (default 1)"}},
		{name: "unknown flag", args: []string{"-x"}, code: 2, exit: true, stderr: []string{"flag provided but not defined: -x", "demo does things."}},
		{name: "bad value", args: []string{"-n", "many"}, code: 2, exit: true, stderr: []string{`invalid value "many" for flag -n`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := New("demo", "demo does things.", &stderr)
			n := c.Int("n", 1, "how many")
			code, exit := c.ParseArgs(tc.args)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.exit, exit)
			if !exit {
				assert.Equal(t, tc.n, *n)
			}
			if tc.noStderr {
				assert.Empty(t, stderr.String())
			}
			for _, s := range tc.stderr {
				assert.Contains(t, stderr.String(), s)
			}
		})
	}
}

func TestGiven(t *testing.T) {
	c := New("demo", "about", &bytes.Buffer{})
	c.Int("n", 1, "")
	c.Int("m", 1, "")
	_, exit := c.ParseArgs([]string{"-n", "1"})
	assert.False(t, exit)
	assert.True(t, c.Given("n"), "given, even at its default")
	assert.False(t, c.Given("m"))
	assert.False(t, c.Given("other"))
}

func TestFail(t *testing.T) {
	var stderr bytes.Buffer
	c := New("demo", "about", &stderr)
	assert.Equal(t, 1, c.Fail(1, errors.New("no device")))
	assert.Equal(t, 2, c.Fail(2, "exhaustion:", errors.New("full")))
	assert.Equal(t, "demo: no device\ndemo: exhaustion: full\n", stderr.String())
}

func TestPositives(t *testing.T) {
	for _, tc := range []struct {
		s        string
		distinct bool
		want     []int
		err      string
	}{
		{"1, 2,4", false, []int{1, 2, 4}, ""},
		{"2,2", false, []int{2, 2}, ""},
		{"2,2", true, nil, `"2,2": want comma-separated distinct integers 1 to 8`},
		{"0", false, nil, `"0": want comma-separated integers 1 to 8`},
		{"9", true, nil, `"9": want comma-separated distinct integers 1 to 8`},
		{"1,x", false, nil, `"1,x": want comma-separated integers 1 to 8`},
		{"", false, nil, `"": want comma-separated integers 1 to 8`},
	} {
		got, err := Positives(tc.s, 8, tc.distinct)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.s)
			continue
		}
		assert.NoError(t, err, tc.s)
		assert.Equal(t, tc.want, got, tc.s)
	}
}

func TestRuntime(t *testing.T) {
	var stderr bytes.Buffer
	c := New("demo", "about", &stderr)
	which := c.Runtime()
	_, exit := c.ParseArgs([]string{"-runtime", "fake"})
	assert.False(t, exit)
	assert.Equal(t, "fake", *which)

	var runtime string
	c = New("demo", "about", &stderr)
	c.RuntimeVar(&runtime)
	c.Usage()
	assert.Contains(t, stderr.String(), "-runtime string\n    \tCUDA runtime to use: ")
}

// Run sets the fake's values of the flags the command line did not give,
// on the fake runtime only, before the work; it says which runtime runs,
// and turns the work's error into exit status 1.
func TestRunSetsTheFakesValues(t *testing.T) {
	fake, err := choose.Open("fake")
	require.NoError(t, err)
	defer fake.Close()
	for _, tc := range []struct {
		name    string
		rt      *choose.Runtime
		workErr error
		code    int
		n, m    int
		stderr  string
	}{
		{"fake", fake, nil, 0, 1, 7, ""},
		{"cuda", &choose.Runtime{Full: fake.Full, CUDA: true, Description: "a GPU"}, nil, 0, 1, 1, ""},
		{"failing work", fake, errors.New("no device"), 1, 1, 7, "demo: no device\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			c := New("demo", "about", &stderr)
			n := c.Int("n", 1, "")
			m := c.Int("m", 1, "")
			Fake(c, "n", n, 7)
			Fake(c, "m", m, 7)
			_, exit := c.ParseArgs([]string{"-n", "1"})
			require.False(t, exit)
			var during [2]int
			code := c.Run(tc.rt, &stdout, func() error {
				during = [2]int{*n, *m}
				return tc.workErr
			})
			assert.Equal(t, tc.code, code)
			assert.Equal(t, [2]int{tc.n, tc.m}, during, "-n given, even at its default: kept; -m not given: the fake's value, on the fake only")
			assert.Equal(t, "runtime: "+tc.rt.Description+"\n", stdout.String())
			assert.Equal(t, tc.stderr, stderr.String())
		})
	}
}

func TestLaunches(t *testing.T) {
	for s, want := range map[string][]bool{"graph": {true}, "calls": {false}, "both": {true, false}} {
		got, err := Launches(s, "calls")
		assert.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	_, err := Launches("kernels", "calls")
	assert.EqualError(t, err, `-launch "kernels": want graph, calls or both`)
}
