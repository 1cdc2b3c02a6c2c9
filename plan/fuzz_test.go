package plan_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// FuzzReadTrace feeds arbitrary bytes to the trace reader: it must refuse
// with ErrTrace or return tensors that Plan accepts, never panic.
func FuzzReadTrace(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := plan.ReadTrace(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, plan.ErrTrace)
			require.Nil(t, tr)
			return
		}
		for i, q := range tr.Tensors {
			require.Positive(t, q.Size, "tensor %d", i)
			require.True(t, 0 <= q.First && q.First <= q.Last && q.Last < tr.Ops, "tensor %d: %+v", i, q)
		}
		res, err := plan.Plan(tr.Tensors, plan.WithTries(20))
		if err != nil {
			// Sizes near 2^64 are valid tensors that no arena can hold.
			require.ErrorIs(t, err, plan.ErrOverflow)
			return
		}
		require.NoError(t, plan.Validate(tr.Tensors, res.Offsets))
	})
}

// FuzzPlan decodes arbitrary bytes into requests, some invalid, some huge,
// some for the whole plan, and plans them, around half of them placed first
// when the first byte is odd. A plan must be valid, deterministic and not
// below the lower bound; a refusal must wrap ErrInvalidRequest or
// ErrOverflow.
func FuzzPlan(f *testing.F) {
	f.Fuzz(planFuzzInput)
}

func planFuzzInput(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	reqs := fuzzRequests(data[1:])
	var placed []plan.Placed
	if data[0]%2 == 1 && len(reqs) > 1 {
		half := len(reqs) / 2
		res, err := plan.Plan(reqs[:half], plan.WithTries(10))
		if err != nil {
			requireRefusal(t, err)
			return
		}
		for i, q := range reqs[:half] {
			placed = append(placed, plan.Placed{Request: q, Offset: res.Offsets[i]})
		}
		reqs = reqs[half:]
	}
	res, err := plan.Plan(reqs, plan.WithPlaced(placed), plan.WithTries(int(data[0])))
	if err != nil {
		requireRefusal(t, err)
		return
	}
	all, offs := together(reqs, res.Offsets, placed)
	require.NoError(t, plan.Validate(all, offs))
	assert.GreaterOrEqual(t, res.ArenaBytes, res.LowerBound)
	lb, err := plan.LowerBound(all)
	require.NoError(t, err)
	assert.Equal(t, lb, res.LowerBound)
	again, err := plan.Plan(reqs, plan.WithPlaced(placed), plan.WithTries(int(data[0])))
	require.NoError(t, err)
	assert.Equal(t, res, again)
}

func requireRefusal(t *testing.T, err error) {
	t.Helper()
	require.True(t, errors.Is(err, plan.ErrInvalidRequest) || errors.Is(err, plan.ErrOverflow), "unexpected error: %v", err)
}

// fuzzRequests reads up to 64 requests of 6 bytes each: a size mantissa and
// shift, an alignment, a first step and a length, with reserved values for
// invalid and extreme requests.
func fuzzRequests(data []byte) []plan.Request {
	var reqs []plan.Request
	for len(data) >= 6 && len(reqs) < 64 {
		b := data[:6]
		data = data[6:]
		q := plan.Request{Size: (uint64(binary.BigEndian.Uint16(b[1:3])) + 1) << (b[0] % 48)}
		switch b[0] {
		case 255:
			q.Size = math.MaxUint64 - uint64(b[1])
		case 254:
			q.Size = 0
		case 253:
			q.Size = 1 << 62
		}
		switch {
		case b[3] == 127:
			q.Align = 3
		case b[3] >= 128:
			q.Align = 1 << (b[3] % 24)
		}
		q.First, q.Last = int(b[4]), int(b[4])+int(b[5]%16)
		switch b[5] {
		case 255:
			q.First, q.Last = 0, math.MaxInt32
		case 254:
			q.Last = q.First - 1
		case 253:
			q.First, q.Last = math.MaxInt-int(b[4]), math.MaxInt
		}
		reqs = append(reqs, q)
	}
	return reqs
}
