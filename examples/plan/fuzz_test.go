package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCLI runs the command on arbitrary input, read as a trace or as a
// CSV, with a unit and a drawing: it must print a plan or refuse the input
// with exit 1 and a message, never panic or hang, and draw well-formed SVG
// whose size is bounded by the input's, whatever its step count.
func FuzzCLI(f *testing.F) {
	f.Add([]byte(`{"ops":9223372036854775807,"tensors":[{"size":256,"first":0,"last":0}]}`), false, uint64(1))
	f.Add([]byte(`{"ops":2,"tensors":[{"size":9223372036854775808,"first":0,"last":0},{"size":9223372036854775808,"first":1,"last":1}]}`), false, uint64(1))
	f.Add([]byte(`{"model":"<&>","ops":9223372036854775807,"tensors":[{"size":1,"first":9223372036854775806,"last":9223372036854775806},{"size":18446744073709551360,"first":0,"last":1}]}`), false, uint64(256))
	f.Add([]byte("id,lower,upper,size\n0,0,9223372036854775807,256\n"), true, uint64(1))
	f.Add([]byte("\ufeffid,lower,upper,size\n0,0,2,2\n1,1,3,1\n2,2,4,2\n"), true, uint64(256))
	f.Add([]byte("id,lower,upper,size\n0,0,9223372036854775807,1\n"+strings.Repeat("1,0,1,1\n", 637)), true, uint64(256))
	f.Fuzz(func(t *testing.T, data []byte, asCSV bool, unit uint64) {
		unit = max(unit%4096, 1)
		dir := t.TempDir()
		in := filepath.Join(dir, "in.json")
		if asCSV {
			in = filepath.Join(dir, "in.csv")
		}
		require.NoError(t, os.WriteFile(in, data, 0o644))
		svg := filepath.Join(dir, "out.svg")
		code, out, errOut := runCmd("-in", in, "-unit", strconv.FormatUint(unit, 10), "-svg", svg)
		switch code {
		case 0:
			require.Empty(t, errOut)
			m := tensorsLine.FindStringSubmatch(out)
			require.NotNil(t, m, "the summary: %s", out)
			tensors, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			drawing, err := os.ReadFile(svg)
			require.NoError(t, err)
			require.LessOrEqual(t, len(drawing), 16<<10+1<<10*tensors+6*len(data), "the drawing grows with the input only")
			requireWellFormed(t, drawing)
		case exitFailure:
			require.Empty(t, out)
			require.True(t, strings.HasPrefix(errOut, "plan: "+in+": "), "a refusal names the input: %s", errOut)
		default:
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

var tensorsLine = regexp.MustCompile(`(?m)^tensors +(\d+) over `)

func requireWellFormed(t *testing.T, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "the SVG must be well-formed XML")
	}
}
