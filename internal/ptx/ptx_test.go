package ptx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPTX declares an entry with pointer and scalar parameters between
// comments, the device malloc, one with an array and a half-width parameter,
// and one without parameters.
const testPTX = ".version 8.0\n.target sm_80\n// fill(u32 *p, u32 n, u32 value)\n" +
	".visible .entry fill(.param .u64 .ptr.global.align 4 fill_p, .param .u32 fill_n /* a count */, .param .u32 fill_value) { ret; }\n" +
	".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);\n" +
	".visible .entry mixed(.param .align 8 .b8 mixed_s[24], .param .f64 mixed_d, .param .u16 mixed_h) { ret; }\n" +
	".visible .entry empty { ret; }\n"

func TestParsePTX(t *testing.T) {
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

	info, err = Parse(".visible .entry k(.param .u64 a)\n{ ret; } // malloc is only named in a comment")
	require.NoError(t, err)
	assert.False(t, info.CallsMalloc)
}

func TestParsePTXErrors(t *testing.T) {
	for ptx, want := range map[string]string{
		".entry":                               "ends after .entry",
		".entry k(.param .u64 a":               "without its closing parenthesis",
		".entry k(.param a) {}":                "parameter 1: no type",
		".entry k(.param .u32 a, .u32 b) {}":   "parameter 2",
		".entry k(.param .b8 a[x]) {}":         `array length "x"`,
		".entry k() {} .entry k() {}":          ".entry k twice",
		".entry k(.param .b8 a[4) {}":          "array length of",
		".entry k(.param .b8 a[0]) {} // zero": `array length "0"`,
	} {
		_, err := Parse(ptx)
		if assert.Error(t, err, ptx) {
			assert.Contains(t, err.Error(), want, ptx)
		}
	}
}

func FuzzParsePTX(f *testing.F) {
	f.Add(testPTX)
	f.Add(".entry k(.param .u64 a, .param .align 4 .b8 b[12])")
	f.Fuzz(func(t *testing.T, ptx string) {
		info, err := Parse(ptx)
		if err != nil {
			return
		}
		for _, e := range info.Entries {
			for _, p := range e.Params {
				require.Positive(t, p, "%s", e.Name)
			}
		}
	})
}
