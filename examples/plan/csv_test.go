package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// A small MiniMalloc problem: three buffers of which two meet at step 1,
// lower bound 3 units.
const smallCSV = "id,lower,upper,size\n0,0,2,2\n1,1,3,1\n2,2,4,2\n"

func writeCSV(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "problem.csv")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// TestCSVCapacity plans a CSV problem under capacities that fit and that
// do not, checking the exit status, the JSON fields and the offsets.
func TestCSVCapacity(t *testing.T) {
	in := writeCSV(t, smallCSV)
	tests := []struct {
		name     string
		capacity string
		code     int
		fits     bool
	}{
		{"at the lower bound", "3", 0, true},
		{"roomy", "100", 0, true},
		{"below the lower bound", "2", exitNoFit, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd("-in", in, "-unit", "256", "-capacity", tt.capacity, "-json")
			require.Equal(t, tt.code, code, errOut)
			var got struct {
				ArenaBytes uint64   `json:"arena_bytes"`
				LowerBound uint64   `json:"lower_bound"`
				Fits       *bool    `json:"fits"`
				Offsets    []uint64 `json:"offsets"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			require.NotNil(t, got.Fits)
			assert.Equal(t, tt.fits, *got.Fits)
			assert.Equal(t, uint64(3*256), got.LowerBound)
			reqs := []plan.Request{{Size: 512, First: 0, Last: 1}, {Size: 256, First: 1, Last: 2}, {Size: 512, First: 2, Last: 3}}
			require.NoError(t, plan.Validate(reqs, got.Offsets))
			if tt.fits {
				assert.Equal(t, uint64(3*256), got.ArenaBytes)
			} else {
				assert.Contains(t, errOut, "no layout fits the capacity (512 B)")
			}
		})
	}
}

func TestCSVSummaryAndNoCapacity(t *testing.T) {
	in := writeCSV(t, smallCSV)
	code, out, errOut := runCmd("-in", in, "-unit", "256")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "model                problem")
	assert.Contains(t, out, "tensors              3 over 4 ops")

	code, out, errOut = runCmd("-in", in, "-json")
	require.Equal(t, 0, code, errOut)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.ElementsMatch(t, []string{"arena_bytes", "lower_bound", "offsets"}, keys(got), "no fits without a capacity")
}

// TestCSVByteOrderMark reads a CSV as a spreadsheet exports it, with a
// UTF-8 byte-order mark before the header.
func TestCSVByteOrderMark(t *testing.T) {
	code, out, errOut := runCmd("-in", writeCSV(t, "\ufeff"+smallCSV), "-unit", "256", "-json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"lower_bound":768`)
}

func TestMiniMallocInstanceFits(t *testing.T) {
	code, out, errOut := runCmd("-in", "../../plan/testdata/minimalloc/J.1048576.csv", "-unit", "256", "-capacity", "1048576", "-json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"fits":true`)
}

func TestRefusesBadCSV(t *testing.T) {
	tests := []struct{ name, csv, message string }{
		{"no header", "", "line 1: missing header"},
		{"unknown column", "id,lower,upper,size,colour\n", `unknown column "colour"`},
		{"reversed lifetime", "id,lower,upper,size\n0,0,2,1\n1,5,3,1\n", "line 3: upper (3) is not above lower (5)"},
		{"negative size", "id,lower,upper,size\n0,0,2,-1\n", `line 2: size ("-1") is not a whole number`},
		{"zero size", "id,lower,upper,size\n0,0,2,0\n", "line 2: size is zero"},
		{"short row", "id,lower,upper,size\n0,0,2\n", "line 2: wrong number of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd("-in", writeCSV(t, tt.csv), "-json")
			assert.Equal(t, exitFailure, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.message)
		})
	}
}
