package pinned

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

const injected cudart.Code = 999

// TestAllocFaultSweep fails each CUDA call of an Alloc in turn, for every
// method and flags, with and without fallback, over three chunks: whatever
// call fails, Alloc either succeeds (a fallback, or a call it can do
// without) or fails with the injected error, and nothing is left pinned,
// mapped or tracked.
func TestAllocFaultSweep(t *testing.T) {
	withChunk(t, chunk)
	const size = 3 * chunk
	for _, m := range Methods() {
		for _, fl := range []Flags{0, Portable, Mapped, WriteCombined | Mapped} {
			for _, fallback := range []bool{true, false} {
				if m.registers() && fl&WriteCombined != 0 && !fallback {
					continue // refused before any call: TestFallbackOnMissingAbilities
				}
				opts := []Option{WithMethod(m), WithFlags(fl), WithFallback(fallback)}
				t.Run(fmt.Sprintf("%s/%s/fallback=%t", m, fl, fallback), func(t *testing.T) {
					maps := countMappings(t)
					calls := callsOfClean(t, opts, size)
					for n := 1; n <= calls; n++ {
						f := cudarttest.NewFake()
						require.NoError(t, f.FailNth(n, injected))
						r, err := Alloc(uva{f}, 0, size, opts...)
						if err != nil {
							require.ErrorIs(t, err, cudart.NewError("", injected), "call %d", n)
						} else {
							require.NoError(t, r.Free(), "call %d", n)
						}
						requireNothingPinned(t, f, maps)
					}
				})
			}
		}
	}
}

// callsOfClean counts the CUDA calls of an Alloc that nothing fails.
func callsOfClean(t *testing.T, opts []Option, size uint64) int {
	t.Helper()
	f := cudarttest.NewFakeT(t)
	r, err := Alloc(uva{f}, 0, size, opts...)
	require.NoError(t, err)
	n := len(f.Calls())
	require.NoError(t, r.Free())
	require.Positive(t, n)
	return n
}

// TestFreeFaultSweep fails each CUDA call of a Free in turn: Free reports
// it, and the next Free finishes the job.
func TestFreeFaultSweep(t *testing.T) {
	withChunk(t, chunk)
	for _, m := range Methods() {
		t.Run(m.String(), func(t *testing.T) {
			maps := countMappings(t)
			for n := 1; ; n++ {
				f := cudarttest.NewFake()
				r, err := Alloc(f, 0, 3*chunk, WithMethod(m), WithFallback(false))
				require.NoError(t, err)
				f.ResetCalls()
				require.NoError(t, f.FailNth(n, injected))
				err = r.Free()
				if err == nil {
					require.Greater(t, n, len(f.Calls()), "a fault at call %d went unreported", n)
					requireNothingPinned(t, f, maps)
					return
				}
				require.True(t, errors.Is(err, cudart.NewError("", injected)), err)
				require.NotNil(t, r.Bytes(), "a region that failed to free keeps its bytes")
				require.NoError(t, r.Free(), "retry after call %d failed", n)
				require.Nil(t, r.Bytes())
				requireNothingPinned(t, f, maps)
			}
		})
	}
}

// TestUnregisterFaultSweep fails each CUDA call of an Unregister over three
// chunks in turn: Unregister reports it, keeps what is still registered,
// and is called again until it returns nil, each call unpinning more; then
// nothing is left pinned.
func TestUnregisterFaultSweep(t *testing.T) {
	withChunk(t, chunk)
	buf := make([]byte, 3*chunk)
	for _, fl := range []Flags{0, Mapped, Portable} {
		t.Run(fl.String(), func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			g, err := Register(uva{f}, 0, buf, fl)
			require.NoError(t, err)
			f.ResetCalls()
			require.NoError(t, g.Unregister())
			calls := len(f.Calls())
			require.Positive(t, calls)
			for n := 1; n <= calls; n++ {
				f := cudarttest.NewFake()
				g, err := Register(uva{f}, 0, buf, fl)
				require.NoError(t, err)
				require.NoError(t, f.FailNth(n, injected))
				err = g.Unregister()
				require.ErrorIs(t, err, cudart.NewError("", injected), "call %d", n)
				for tries := 1; err != nil; tries++ {
					require.Less(t, tries, calls, "call %d: Unregister keeps failing: %v", n, err)
					err = g.Unregister()
				}
				requireNothingPinned(t, f, nil)
			}
		})
	}
}
