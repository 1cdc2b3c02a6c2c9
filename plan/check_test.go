package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckFindsDefects gives Plan's check layouts that a defective planner
// might return: each must be refused as the planner's error.
func TestCheckFindsDefects(t *testing.T) {
	placed := []Placed{
		{Request: Request{Size: 1024, Last: 100}, Offset: 0},
		{Request: Request{Size: 512, First: 5, Last: 6}, Offset: 1024},
	}
	reqs := []Request{{Size: 256, First: 1, Last: 2}, {Size: 256, First: 2, Last: 8}}
	tests := []struct {
		name    string
		offs    []uint64
		arena   uint64
		message string
	}{
		{"valid", []uint64{1536, 1792}, 2048, ""},
		{"on a whole-plan buffer", []uint64{512, 1792}, 2048, "request 0 (256 B, steps 1..2) at offset 512 and placed buffer 0"},
		{"on a placed buffer", []uint64{1536, 1280}, 1792, "request 1 (256 B, steps 2..8) at offset 1280 and placed buffer 1"},
		{"on each other", []uint64{1536, 1536}, 1792, "request 0 (256 B, steps 1..2) at offset 1536 and request 1"},
		{"unaligned", []uint64{1536, 1800}, 2056, "request 1 (256 B, steps 2..8) at offset 1800, unaligned to 256"},
		{"arena too small", []uint64{1536, 1792}, 1792, "ends at 2048 B, not at its arena's 1792 B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newProblem(reqs, placed)
			require.NoError(t, err)
			err = p.check(reqs, placed, &Result{Offsets: tt.offs, ArenaBytes: tt.arena, LowerBound: p.lb})
			if tt.message == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInternal)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}

// TestCheckBlamesPlacedOverlaps gives the check enough pairs that it
// sweeps, with two placed buffers sharing bytes: that is the caller's
// input, reported as such, not a defect of the planner.
func TestCheckBlamesPlacedOverlaps(t *testing.T) {
	var reqs []Request
	var offs []uint64
	for k := range 300 {
		reqs = append(reqs, Request{Size: 256, Last: 10})
		offs = append(offs, 256*uint64(k))
	}
	var placed []Placed
	for k := range 300 {
		placed = append(placed, Placed{Request: Request{Size: 256, First: 1, Last: 9}, Offset: 256 * uint64(300+k)})
	}
	placed[7].Offset = placed[6].Offset
	p, err := newProblem(reqs, placed)
	require.NoError(t, err)
	err = p.check(reqs, placed, &Result{Offsets: offs, ArenaBytes: 600 * 256})
	require.ErrorIs(t, err, ErrOverlap)
	assert.NotErrorIs(t, err, ErrInternal)
	assert.Contains(t, err.Error(), "plan: buffers overlap: placed buffer 6 (256 B, steps 1..9) at offset 78336 and placed buffer 7")
}

// TestCheckMatchesValidate compares Plan's check with Validate on layouts
// planned around random valid placed buffers, many of them whole-plan,
// with one offset moved at random in half of them: both must see the same
// overlaps.
func TestCheckMatchesValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 3))
	request := func() Request {
		first := r.IntN(20)
		q := Request{Size: 1 + r.Uint64N(2048), First: first, Last: first + r.IntN(6)}
		if r.IntN(4) == 0 {
			q.First, q.Last = 0, 1<<20
		}
		return q
	}
	requests := func(n int) []Request {
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = request()
		}
		return reqs
	}
	seen := 0
	for trial := range 1000 {
		// Some trials with enough pairs of new and placed buffers that
		// the check sweeps rather than compare every pair.
		nBase, nNew := r.IntN(12), 1+r.IntN(8)
		if trial%25 == 0 {
			nBase, nNew = 300+r.IntN(100), 300+r.IntN(100)
		}
		base := requests(nBase)
		res, err := Plan(base, WithTries(0))
		require.NoError(t, err)
		placed := make([]Placed, len(base))
		for i, q := range base {
			placed[i] = Placed{Request: q, Offset: res.Offsets[i]}
		}
		reqs := requests(nNew)
		res, err = Plan(reqs, WithPlaced(placed), WithTries(0))
		require.NoError(t, err)
		if trial%2 == 0 {
			i := r.IntN(len(reqs))
			res.Offsets[i] = 256 * r.Uint64N(res.ArenaBytes/256+1)
		}
		all, offs := append([]Request(nil), reqs...), append([]uint64(nil), res.Offsets...)
		for _, pl := range placed {
			all, offs = append(all, pl.Request), append(offs, pl.Offset)
		}
		res.ArenaBytes = 0
		for i, q := range all {
			res.ArenaBytes = max(res.ArenaBytes, offs[i]+(q.Size+255)&^255)
		}
		p, err := newProblem(reqs, placed)
		require.NoError(t, err)
		got := p.check(reqs, placed, res)
		if want := Validate(all, offs); want != nil {
			seen++
			require.ErrorIs(t, got, ErrOverlap, "Validate: %v", want)
			require.ErrorIs(t, got, ErrInternal)
		} else {
			require.NoError(t, got)
		}
	}
	assert.Greater(t, seen, 100)
	assert.Less(t, seen, 500)
}
