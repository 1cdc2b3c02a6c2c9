package plan_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

func TestReadCSV(t *testing.T) {
	in := "id,lower,upper,size\n0,0,2,3\n1,1,3,1\n7,5,6,2\n"
	reqs, err := plan.ReadCSV(strings.NewReader(in), 256)
	require.NoError(t, err)
	assert.Equal(t, []plan.Request{
		{Size: 768, First: 0, Last: 1},
		{Size: 256, First: 1, Last: 2},
		{Size: 512, First: 5, Last: 5},
	}, reqs)

	reqs, err = plan.ReadCSV(strings.NewReader("size,upper,alignment,lower,id\r\n10, 4, 2, 1, 0\r\n"), 1)
	require.NoError(t, err)
	assert.Equal(t, []plan.Request{{Size: 10, Align: 2, First: 1, Last: 3}}, reqs, "columns in any order, spaces and CRLF")

	for _, head := range []string{"\ufeffid,lower,upper,size", "\ufeff\"id\",lower,upper,size"} {
		reqs, err = plan.ReadCSV(strings.NewReader(head+"\n0,0,2,3\n"), 256)
		require.NoError(t, err, "a spreadsheet's byte-order mark before %q", head)
		assert.Equal(t, []plan.Request{{Size: 768, First: 0, Last: 1}}, reqs)
	}
	_, err = plan.ReadCSV(strings.NewReader("id,\ufefflower,upper,size\n"), 1)
	assert.ErrorContains(t, err, `unknown column "\ufefflower"`, "a byte-order mark is skipped at the start only")
}

func TestReadCSVRefuses(t *testing.T) {
	tests := []struct {
		name, in string
		unit     uint64
		message  string
	}{
		{"empty", "", 1, "line 1: missing header"},
		{"missing column", "id,lower,upper\n", 1, `line 1: missing column "size"`},
		{"twice", "id,lower,upper,size,size\n", 1, `column "size" appears twice`},
		{"reversed", "id,lower,upper,size\n0,1,2,1\n1,4,4,1\n", 1, "line 3: upper (4) is not above lower (4)"},
		{"negative", "id,lower,upper,size\n0,-1,2,1\n", 1, `line 2: lower ("-1") is not a whole number`},
		{"not a number", "id,lower,upper,size\nx,0,2,1\n", 1, `line 2: id ("x")`},
		{"zero size", "id,lower,upper,size\n0,0,2,0\n", 1, "line 2: size is zero"},
		{"overflow", "id,lower,upper,size\n0,0,2,18446744073709551615\n", 256, "line 2: size 18446744073709551615 times unit 256 overflows"},
		{"bad alignment", "id,lower,upper,size,alignment\n0,0,2,1,3\n", 1, "line 2: alignment 3 is not a power of two"},
		{"ragged", "id,lower,upper,size\n0,0,2,1\n1,0\n", 1, "line 3: wrong number of fields"},
		{"quote", "id,lower,upper,size\n0,0,2,\"1\n", 1, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, err := plan.ReadCSV(strings.NewReader(tt.in), tt.unit)
			require.Error(t, err)
			assert.Nil(t, reqs)
			assert.ErrorIs(t, err, plan.ErrTrace)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
	_, err := plan.ReadCSV(strings.NewReader("id,lower,upper,size\n"), 0)
	assert.ErrorIs(t, err, plan.ErrInvalidRequest, "unit zero")
}

// FuzzReadCSV feeds arbitrary text to the CSV reader: it must refuse with
// ErrTrace naming a line, or return requests that Plan accepts.
func FuzzReadCSV(f *testing.F) {
	f.Add("id,lower,upper,size\n0,0,2,3\n1,1,3,1\n", uint64(256))
	f.Add("id,lower,upper,size,alignment\n0,0,2,3,4\n", uint64(1))
	f.Add("id,lower,upper,size\n0,5,3,1\n", uint64(1))
	// The edges of the ranges: steps up to math.MaxInt, sizes near 2^63
	// and 2^64, a spreadsheet's byte-order mark, and issue 22's request
	// alive to the end among 637 alive at step 0.
	f.Add("\ufeffid,lower,upper,size\n0,0,9223372036854775807,256\n", uint64(1))
	f.Add("id,lower,upper,size\n0,9223372036854775806,9223372036854775807,9223372036854775808\n1,0,1,9223372036854775808\n", uint64(1))
	f.Add("id,lower,upper,size\n0,0,9223372036854775807,18446744073709551360\n1,0,2,1\n", uint64(1))
	f.Add("id,lower,upper,size,alignment\n0,1,2,36028797018963968,4096\n1,1,9223372036854775807,1,1\n", uint64(256))
	f.Add("id,lower,upper,size\n0,0,9223372036854775807,1\n"+strings.Repeat("1,0,1,1\n", 637), uint64(256))
	f.Fuzz(func(t *testing.T, in string, unit uint64) {
		unit = max(unit%4096, 1)
		reqs, err := plan.ReadCSV(strings.NewReader(in), unit)
		if err != nil {
			require.ErrorIs(t, err, plan.ErrTrace)
			require.Contains(t, err.Error(), "line ")
			return
		}
		if len(reqs) > 1024 {
			return
		}
		res, err := plan.Plan(reqs, plan.WithTries(20))
		if err != nil {
			requireOverflow(t, reqs, err)
			return
		}
		require.NoError(t, plan.Validate(reqs, res.Offsets))
	})
}
