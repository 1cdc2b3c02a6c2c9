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
			requireOverflow(t, tr.Tensors, err)
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
		if len(placed) == 0 && errors.Is(err, plan.ErrOverflow) {
			requireOverflow(t, reqs, err)
		}
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

// requireOverflow asserts that Plan refused reqs for overflow only where
// stacking them, each aligned, would not fit in 64 bits either.
func requireOverflow(t *testing.T, reqs []plan.Request, err error) {
	t.Helper()
	require.ErrorIs(t, err, plan.ErrOverflow)
	require.False(t, stackable(reqs), "refused requests that stack below 2^64: %v", err)
}

// fuzzSteps are the steps that reserved values of fuzzRequests draw from:
// the edges of the range a Request allows, and the pool's whole plan.
var fuzzSteps = []int{0, 1, 2, math.MaxInt32, math.MaxInt - 2, math.MaxInt - 1, math.MaxInt}

// maxFuzzRequests bounds the requests of one input: enough for the large-
// input planner, which takes over at a few hundred buffers alive together.
const maxFuzzRequests = 1024

// fuzzRequests reads requests of 6 bytes each: a size mantissa and shift,
// an alignment, a first step and a length, with reserved values for
// invalid and extreme requests, the edges of the step and size ranges
// among them, and for repeating the previous request up to 256 times.
func fuzzRequests(data []byte) []plan.Request {
	var reqs []plan.Request
	for len(data) >= 6 && len(reqs) < maxFuzzRequests {
		b := data[:6]
		data = data[6:]
		if b[0] == 250 {
			for k := 0; k <= int(b[1]) && len(reqs) > 0 && len(reqs) < maxFuzzRequests; k++ {
				reqs = append(reqs, reqs[len(reqs)-1])
			}
			continue
		}
		q := plan.Request{Size: (uint64(binary.BigEndian.Uint16(b[1:3])) + 1) << (b[0] % 48)}
		switch b[0] {
		case 255:
			q.Size = math.MaxUint64 - uint64(b[1])
		case 254:
			q.Size = 0
		case 253:
			q.Size = 1 << 62
		case 252:
			q.Size = 1<<63 - uint64(b[1])
		case 251:
			q.Size = 1<<63 + uint64(b[1])<<8
		}
		switch {
		case b[3] == 127:
			q.Align = 3
		case b[3] >= 128:
			q.Align = 1 << (b[3] % 24)
		}
		q.First, q.Last = int(b[4]), int(b[4])+int(b[5]%16)
		switch {
		case b[5] == 255:
			q.First, q.Last = 0, math.MaxInt32
		case b[5] == 254:
			q.Last = q.First - 1
		case b[5] == 253:
			q.First, q.Last = math.MaxInt-int(b[4]), math.MaxInt
		case b[5] == 252:
			q.Last = math.MaxInt
		case b[5] == 251:
			q.Last = math.MaxInt - 1
		case b[5] >= 240:
			a, z := fuzzSteps[int(b[4])%len(fuzzSteps)], fuzzSteps[int(b[5]-240)%len(fuzzSteps)]
			q.First, q.Last = min(a, z), max(a, z)
		}
		reqs = append(reqs, q)
	}
	return reqs
}
