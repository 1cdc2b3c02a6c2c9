package plan_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

func TestValidate(t *testing.T) {
	steps := func(first, last int) plan.Request { return plan.Request{Size: 1000, First: first, Last: last} }
	tests := []struct {
		name    string
		reqs    []plan.Request
		offs    []uint64
		want    error
		message string
	}{
		{"empty", nil, nil, nil, ""},
		{"adjacent bytes", []plan.Request{steps(0, 5), steps(0, 5)}, []uint64{0, 1024}, nil, ""},
		{"same bytes, different steps", []plan.Request{steps(0, 2), steps(3, 5)}, []uint64{0, 0}, nil, ""},
		{"overlap", []plan.Request{steps(0, 1), steps(5, 6), steps(6, 9)}, []uint64{0, 0, 768}, plan.ErrOverlap, "request 1 (1000 B, steps 5..6) at offset 0 and request 2"},
		{"overlap at a shared last step", []plan.Request{steps(0, 3), steps(3, 4)}, []uint64{0, 512}, plan.ErrOverlap, "request 0"},
		{"contained", []plan.Request{{Size: 8192, Last: wholePlan}, steps(7, 7)}, []uint64{0, 4096}, plan.ErrOverlap, "steps 0..end"},
		{"count mismatch", []plan.Request{steps(0, 1)}, nil, plan.ErrInvalidRequest, "0 offsets for 1 requests"},
		{"misaligned", []plan.Request{{Size: 1, Align: 4096}}, []uint64{256}, plan.ErrInvalidRequest, "not a multiple of 4096"},
		{"invalid request", []plan.Request{steps(0, 1), {Size: 1, First: 2, Last: 1}}, []uint64{0, 0}, plan.ErrInvalidRequest, "request 1"},
		{"past 2^64", []plan.Request{steps(0, 1)}, []uint64{math.MaxUint64 &^ 255}, plan.ErrOverflow, "request 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plan.Validate(tt.reqs, tt.offs)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}

// TestValidateMatchesBruteForce compares Validate with a check of every
// pair on random offsets, most of them overlapping somewhere.
func TestValidateMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	overlaps := 0
	for range 2000 {
		reqs := make([]plan.Request, 1+r.IntN(12))
		offs := make([]uint64, len(reqs))
		for i := range reqs {
			first := r.IntN(10)
			reqs[i] = plan.Request{Size: 1 + r.Uint64N(2000), First: first, Last: first + r.IntN(4)}
			offs[i] = r.Uint64N(24) * 256
		}
		err := plan.Validate(reqs, offs)
		if overlapping(reqs, offs) {
			overlaps++
			require.ErrorIs(t, err, plan.ErrOverlap)
		} else {
			require.NoError(t, err)
		}
	}
	assert.Greater(t, overlaps, 100)
	assert.Less(t, overlaps, 1900)
}

// TestErrorsLeadWithTheirSentinel: every error says the package and what
// failed first, then which request and why, however deep it was made.
func TestErrorsLeadWithTheirSentinel(t *testing.T) {
	zero := plan.Request{Size: 0, Last: 1}
	err := plan.Validate([]plan.Request{{Size: 256, Last: 1}, zero}, []uint64{0, 256})
	require.ErrorIs(t, err, plan.ErrInvalidRequest)
	assert.EqualError(t, err, fmt.Sprintf("plan: invalid request: request 1 (%s): size is zero", zero))
	_, err = plan.LowerBound([]plan.Request{zero})
	assert.EqualError(t, err, "plan: invalid request: request 0: size is zero")
	_, err = plan.Plan([]plan.Request{zero})
	assert.EqualError(t, err, fmt.Sprintf("plan: invalid request: request 0 (%s): size is zero", zero))
	_, err = plan.Request{Size: math.MaxUint64, Last: 1}.Footprint()
	require.ErrorIs(t, err, plan.ErrOverflow)
	assert.EqualError(t, err, "plan: size overflows 64 bits: size 18446744073709551615 rounded up to 256 bytes")
}
