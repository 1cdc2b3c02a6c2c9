package memregions

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMisuse(t *testing.T) {
	var r Registry
	h, err := r.AddHeap(0x1000, 0x1000, "arena")
	require.NoError(t, err)
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1000, Size: 16, Name: "a"}}))
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"empty heap", second(r.AddHeap(0x9000, 0, "x")), "is empty"},
		{"heap at 0", second(r.AddHeap(0, 16, "x")), "address 0"},
		{"heap wraps", second(r.AddHeap(^uint64(0)-4, 16, "x")), "past the end"},
		{"heap overlaps", second(r.AddHeap(0x1800, 0x1000, "x")), `overlaps heap "arena"`},
		{"heap inside", second(r.AddHeap(0x1100, 16, "x")), `overlaps heap "arena"`},
		{"unknown heap", r.Add(99, []Region{{Addr: 0x1000, Size: 1}}), "not registered"},
		{"empty region", r.Add(h, []Region{{Addr: 0x1100, Name: "e"}}), `"e" (0 B) is empty`},
		{"region before heap", r.Add(h, []Region{{Addr: 0xfff, Size: 2}}), "not inside heap"},
		{"region past heap", r.Add(h, []Region{{Addr: 0x1ff0, Size: 17}}), "not inside heap"},
		{"region wraps", r.Add(h, []Region{{Addr: 0x1ff0, Size: ^uint64(0)}}), "not inside heap"},
		{"same start", r.Add(h, []Region{{Addr: 0x1000, Size: 32}}), `starts where registered region "a"`},
		{"same start in batch", r.Add(h, []Region{{Addr: 0x1100, Size: 1}, {Addr: 0x1100, Size: 2}}), "two regions start"},
		{"remove unknown", r.Remove(h, []uint64{0x1100}), "no region"},
		{"remove twice", r.Remove(h, []uint64{0x1000, 0x1000}), "twice"},
		{"name unknown", r.Name(h, []Region{{Addr: 0x1100, Name: "z"}}), "no region"},
		{"reset unknown", r.ResetHeap(7), "not registered"},
		{"remove unknown heap", r.RemoveHeap(7), "not registered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.Contains(t, tc.err.Error(), tc.want)
		})
	}
	got, err := r.Regions(h)
	require.NoError(t, err)
	assert.Equal(t, []Region{{Addr: 0x1000, Size: 16, Name: "a"}}, got, "failed calls changed nothing")
}

func second(_ uint64, err error) error { return err }

func TestLifecycle(t *testing.T) {
	var r Registry
	h, err := r.AddHeap(0x1000, 0x1000, "arena")
	require.NoError(t, err)
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1100, Size: 0x100, Name: "b"}, {Addr: 0x1000, Size: 0x100, Name: "a"}}))
	assert.Nil(t, r.Check(0x1000, 0x200), "two adjacent regions cover the access")
	require.NoError(t, r.Name(h, []Region{{Addr: 0x1000, Name: "renamed"}}))
	m := r.Check(0x1200, 1)
	require.NotNil(t, m)
	assert.Equal(t, `byte 0x1200 in heap "arena" is in no registered buffer: it is byte 0 past the end of "b" (256 B)`, m.Error())
	require.NoError(t, r.Remove(h, []uint64{0x1100}))
	m = r.Check(0x10ff, 2)
	require.NotNil(t, m)
	assert.Equal(t, uint64(0x1100), m.Addr)
	assert.Equal(t, "renamed", m.Nearest.Name)
	require.NoError(t, r.ResetHeap(h))
	m = r.Check(0x1000, 1)
	require.NotNil(t, m)
	assert.Equal(t, `byte 0x1000 is in heap "arena", which has no registered buffer; it was in "renamed" (256 B) at 0x1000, unregistered since`, m.Error())
	m = r.Check(0x1300, 1)
	require.NotNil(t, m)
	assert.Contains(t, m.Error(), "has no registered buffer", "a byte no region held")
	assert.Nil(t, r.Check(0x2000, 0x100), "outside every heap is not the registry's business")
	require.NoError(t, r.RemoveHeap(h))
	assert.Nil(t, r.Check(0x1000, 1))
	_, err = r.AddHeap(0x1000, 0x1000, "again")
	assert.NoError(t, err, "an unregistered heap's range is free again")
}

// TestMissNamesTheRegionUnregisteredLast: a byte no region holds now but
// one held before is named by the last such region, as a use after free is.
func TestMissNamesTheRegionUnregisteredLast(t *testing.T) {
	var r Registry
	h, err := r.AddHeap(0x1000, 0x1000, "arena")
	require.NoError(t, err)
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1000, Size: 0x100, Name: "first"}, {Addr: 0x1100, Size: 0x100, Name: "next"}}))
	require.NoError(t, r.Remove(h, []uint64{0x1000}))
	snap := r.Snapshot()
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1080, Size: 0x10, Name: "second"}}))
	require.NoError(t, r.Remove(h, []uint64{0x1080}))
	m := r.Check(0x1080, 1)
	require.NotNil(t, m)
	assert.Equal(t, "second", m.Was.Name, "the last to hold the byte")
	assert.Equal(t, "first", r.Check(0x1000, 1).Was.Name)
	assert.Equal(t, "first", snap.Check(0x1080, 1).Was.Name, "a snapshot keeps its own past")
	assert.Zero(t, r.Check(0x1200, 1).Was.Size, "no region ever held 0x1200")
	assert.Equal(t, "next", r.Check(0x1200, 1).Nearest.Name)
	for i := range maxGone {
		a := uint64(0x1800 + i)
		require.NoError(t, r.Add(h, []Region{{Addr: a, Size: 1}}))
		require.NoError(t, r.Remove(h, []uint64{a}))
	}
	assert.Zero(t, r.Check(0x1000, 1).Was.Size, "only the last maxGone are remembered")
}

func TestMissBefore(t *testing.T) {
	var r Registry
	h, err := r.AddHeap(0x1000, 0x1000, "arena")
	require.NoError(t, err)
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1000, Size: 0x10}, {Addr: 0x1800, Size: 0x10, Name: "late"}}))
	m := r.Check(0x17ff, 1)
	require.NotNil(t, m)
	assert.False(t, m.After)
	assert.Equal(t, uint64(1), m.Distance)
	assert.Contains(t, m.Error(), `1 B before the start of "late" (16 B)`)
	m = r.Check(0x1010, 1)
	require.NotNil(t, m)
	assert.Contains(t, m.Error(), "past the end of the unnamed buffer at 0x1000 (16 B)")
}

// TestCheckMatchesBytes holds Check to a byte-by-byte model over random
// overlapping regions: the first uncovered byte, and the nearest region's
// distance.
func TestCheckMatchesBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const base, size = 0x10000, 512
	for range 300 {
		var r Registry
		h, err := r.AddHeap(base, size, "h")
		require.NoError(t, err)
		covered := make([]bool, size)
		var regions []Region
		starts := map[uint64]bool{}
		for range rng.IntN(8) {
			a := uint64(rng.IntN(size))
			n := uint64(1 + rng.IntN(int(size-a)))
			if starts[a] {
				continue
			}
			starts[a] = true
			regions = append(regions, Region{Addr: base + a, Size: n})
			for i := a; i < a+n; i++ {
				covered[i] = true
			}
		}
		require.NoError(t, r.Add(h, regions))
		for range 20 {
			a := uint64(rng.IntN(size + 64))
			n := uint64(1 + rng.IntN(64))
			want := -1
			for i := a; i < a+n && i < size; i++ {
				if !covered[i] {
					want = int(i)
					break
				}
			}
			m := r.Check(base+a, n)
			if want < 0 {
				assert.Nil(t, m, "access [%d, +%d) over %v", a, n, regions)
				continue
			}
			require.NotNil(t, m, "access [%d, +%d) over %v", a, n, regions)
			require.Equal(t, base+uint64(want), m.Addr)
			if len(regions) == 0 {
				continue
			}
			best := ^uint64(0)
			for _, g := range regions {
				switch {
				case g.End() <= m.Addr:
					best = min(best, m.Addr-g.End())
				case g.Addr > m.Addr:
					best = min(best, g.Addr-m.Addr)
				}
			}
			assert.Equal(t, best, m.Distance, "nearest of %v to 0x%x", regions, m.Addr)
		}
	}
}

// TestContainingMatchesRegions holds Containing to a scan of random
// overlapping regions in two heaps: the region that holds the address and
// starts last, or none, also before, between and past the heaps.
func TestContainingMatchesRegions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const size = 512
	bases := []uint64{0x10000, 0x20000}
	for range 300 {
		var r Registry
		var regions []Region
		for _, base := range bases {
			h, err := r.AddHeap(base, size, "h")
			require.NoError(t, err)
			var add []Region
			starts := map[uint64]bool{}
			for range rng.IntN(8) {
				a := uint64(rng.IntN(size))
				if starts[a] {
					continue
				}
				starts[a] = true
				add = append(add, Region{Addr: base + a, Size: uint64(1 + rng.IntN(int(size-a)))})
			}
			require.NoError(t, r.Add(h, add))
			regions = append(regions, add...)
		}
		for range 40 {
			a := bases[rng.IntN(2)] - 64 + uint64(rng.IntN(size+128))
			var want Region
			found := false
			for _, g := range regions {
				if g.Addr <= a && a < g.End() && (!found || g.Addr > want.Addr) {
					want, found = g, true
				}
			}
			got, ok := r.Containing(a)
			require.Equal(t, found, ok, "0x%x over %v", a, regions)
			assert.Equal(t, want, got, "0x%x over %v", a, regions)
		}
	}
}

// TestSnapshot: a snapshot keeps the regions it saw whatever the registry
// does afterwards.
func TestSnapshot(t *testing.T) {
	var r Registry
	h, err := r.AddHeap(0x1000, 0x1000, "arena")
	require.NoError(t, err)
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1000, Size: 16, Name: "a"}}))
	snap := r.Snapshot()
	require.NoError(t, r.Name(h, []Region{{Addr: 0x1000, Name: "b"}}))
	require.NoError(t, r.Add(h, []Region{{Addr: 0x1010, Size: 16}}))
	require.NoError(t, r.Remove(h, []uint64{0x1000}))
	_, err = r.AddHeap(0x3000, 16, "later")
	require.NoError(t, err)
	got, err := snap.Regions(h)
	require.NoError(t, err)
	assert.Equal(t, []Region{{Addr: 0x1000, Size: 16, Name: "a"}}, got)
	assert.Nil(t, snap.Check(0x1000, 16))
	assert.NotNil(t, snap.Check(0x1010, 1))
	assert.Nil(t, snap.Check(0x3000, 1), "the later heap is not in the snapshot")
	require.NoError(t, r.ResetHeap(h))
	require.NoError(t, r.RemoveHeap(h))
	assert.Nil(t, snap.Check(0x1000, 16))
}
