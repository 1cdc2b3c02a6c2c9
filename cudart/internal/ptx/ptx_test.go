package ptx

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/ptxcases"
)

// testPTX declares an entry with pointer and scalar parameters between
// comments, the device malloc, one with an array and a half-width parameter,
// and one without parameters.
const testPTX = ptxcases.Header + "// fill(u32 *p, u32 n, u32 value)\n" +
	".visible .entry fill(.param .u64 .ptr.global.align 4 fill_p, .param .u32 fill_n /* a count */, .param .u32 fill_value) { ret; }\n" +
	".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);\n" +
	".visible .entry mixed(.param .align 8 .b8 mixed_s[24], .param .f64 mixed_d, .param .u16 mixed_h) { ret; }\n" +
	".visible .entry empty { ret; }\n"

func TestParse(t *testing.T) {
	info, err := Parse(testPTX)
	require.NoError(t, err)
	assert.Equal(t, []Entry{
		{Name: "fill", Params: []uint32{8, 4, 4}},
		{Name: "mixed", Params: []uint32{24, 8, 2}},
		{Name: "empty"},
	}, info.Entries)
	assert.True(t, info.CallsMalloc)
	assert.Equal(t, []string{"fill", "mixed", "empty"}, info.Names())
	_, ok := info.Entry("nope")
	assert.False(t, ok)

	info, err = Parse(ptxcases.Header + ".visible .entry k(.param .u64 a)\n{ ret; } // malloc is only named in a comment")
	require.NoError(t, err)
	assert.False(t, info.CallsMalloc)
}

// TestParseRefusesWhatTheJITRefuses: every text of the table is refused,
// at its line and with the JIT's code, or read, as the JIT does; and the
// edges of its limits as ParamSpace says.
func TestParseRefusesWhatTheJITRefuses(t *testing.T) {
	for _, c := range append(ptxcases.Cases[:len(ptxcases.Cases):len(ptxcases.Cases)], ptxcases.Edges...) {
		_, err := Parse(c.PTX)
		if c.Code == ptxcases.Loads {
			assert.NoError(t, err, c.Name)
			continue
		}
		if assert.Error(t, err, c.Name) {
			assert.Equal(t, int(c.Code), JITCode(err), "%s: %v", c.Name, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("PTX line %d: ", c.Line), c.Name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for body, want := range map[string]string{
		".entry":                               "line 4: .entry has no name",
		".entry k(.param .u64 a":               "without its closing parenthesis",
		".entry k(.param a) {}":                "parameter 1: no type",
		".entry k(.param .u32 a, .u32 b) {}":   "parameter 2",
		".entry k(.param .b8 a[x]) {}":         `array length "x"`,
		".entry k() {} .entry k() {}":          "duplicate .entry k",
		".entry k(.param .b8 a[4) {}":          "array length of",
		".entry k(.param .b8 a[0]) {} // zero": `array length "0"`,
		".entry k(.param .align .b8 a) {}":     ".align without a number",
		".entry k(.param .u32 .u64 a) {}":      "two types",
		".entry k(.param .u32 a b) {}":         `"b" after the name`,
		".entry k() ; {}":                      "line 4: .entry k has no body",
		"/* a comment\n\n*/ }":                 "line 6: } closes no block",
	} {
		_, err := Parse(ptxcases.Header + body)
		if assert.Error(t, err, body) {
			assert.Contains(t, err.Error(), want, body)
		}
	}
}

func TestParamSpace(t *testing.T) {
	for _, c := range []struct {
		version, target string
		want            uint64
	}{
		{"8.0", "sm_80", 4352},
		{"8.1", "sm_80", 32764},
		{"8.1", "sm_70", 32764},
		{"8.1", "sm_90a", 32764},
		{"9.0", "sm_120f", 32764},
		{"10.0", "sm_100", 32764},
		{"8.1", "sm_61", 4352},
		{"7.8", "sm_90", 4352},
	} {
		assert.Equal(t, c.want, ParamSpace(c.version, c.target), "%s %s", c.version, c.target)
	}
}

func TestParseParamLayout(t *testing.T) {
	info, err := Parse(ptxcases.Params("8.0", ".param .u8 a, .param .u64 b, .param .u32 c, .param .align 16 .b8 d[24]"))
	require.NoError(t, err)
	assert.Equal(t, []uint32{1, 8, 4, 24}, info.Entries[0].Params)
	_, err = Parse(ptxcases.Params("8.0", ".param .u8 a, .param .align 8 .b8 b[4344]"))
	assert.NoError(t, err, "1 B, 7 B of padding and 4,344 B: 4,352 B")
	_, err = Parse(ptxcases.Params("8.0", ".param .u8 a, .param .align 8 .b8 b[4345]"))
	assert.ErrorContains(t, err, "line 5: .entry k uses too much parameter space: 4353 B, 4352 B at most at .version 8.0, .target sm_80", "the padding counts")
	_, err = Parse(ptxcases.Params("8.0", ".param .align 3 .b8 b[4]"))
	assert.ErrorContains(t, err, ".align 3")
}

func FuzzParse(f *testing.F) {
	f.Add(testPTX)
	f.Add(ptxcases.Header + ".entry k(.param .u64 a, .param .align 4 .b8 b[12]) {}")
	for _, c := range append(ptxcases.Cases[:len(ptxcases.Cases):len(ptxcases.Cases)], ptxcases.Edges...) {
		// The texts of megabytes would slow every mutation down.
		if len(c.PTX) < 64<<10 {
			f.Add(c.PTX)
		}
	}
	f.Fuzz(func(t *testing.T, ptx string) {
		info, err := Parse(ptx)
		if err != nil {
			return
		}
		for _, e := range info.Entries {
			space := uint64(0)
			for _, p := range e.Params {
				require.Positive(t, p, "%s", e.Name)
				space += uint64(p)
			}
			require.LessOrEqual(t, space, uint64(32764), "%s: no PTX version has more parameter space", e.Name)
		}
	})
}
