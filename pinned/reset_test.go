package pinned

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// TestFreeAfterAResetForgetsTheRegion: a reset of the device unpinned the
// region (and freed cudaHostAlloc's memory), so Free calls no CUDA, unmaps
// the package's own mapping, and the same size pins again.
func TestFreeAfterAResetForgetsTheRegion(t *testing.T) {
	for _, m := range Methods() {
		for _, flags := range []Flags{0, Mapped} {
			t.Run(m.String()+"/"+flags.String(), func(t *testing.T) {
				maps := countMappings(t)
				f := cudarttest.NewFakeT(t)
				r, err := Alloc(f, 0, 1<<20, WithMethod(m), WithFlags(flags), WithFallback(false))
				require.NoError(t, err)
				require.NoError(t, f.DeviceReset(0))
				f.ResetCalls()
				require.NoError(t, r.Free(), "the reset freed it")
				assert.Empty(t, f.Calls(), "Free calls no CUDA after the reset")
				assert.Nil(t, r.Bytes())
				requireNothingPinned(t, f, maps)
				r, err = Alloc(f, 0, 1<<20, WithMethod(m), WithFlags(flags), WithFallback(false))
				require.NoError(t, err, "the device pins again")
				require.NoError(t, r.Free())
				requireNothingPinned(t, f, maps)
			})
		}
	}
}

// TestAResetRangeGivesWayToANewOne: memory pinned before a reset and never
// freed no longer blocks pinning the same address, on the same runtime or a
// new one; the stale handle's release then leaves the new range alone.
func TestAResetRangeGivesWayToANewOne(t *testing.T) {
	for name, next := range map[string]func(old *cudarttest.Fake) *cudarttest.Fake{
		"same runtime": func(old *cudarttest.Fake) *cudarttest.Fake { return old },
		"new runtime":  func(*cudarttest.Fake) *cudarttest.Fake { return cudarttest.NewFakeT(t) },
	} {
		t.Run(name, func(t *testing.T) {
			b := make([]byte, 64<<10)
			old := cudarttest.NewFakeT(t)
			stale, err := Register(old, 0, b, 0)
			require.NoError(t, err)
			_, err = Register(old, 0, b[4096:], 0)
			require.ErrorIs(t, err, ErrAlreadyRegistered, "pinned until the reset")
			require.NoError(t, old.DeviceReset(0))
			f := next(old)
			g, err := Register(f, 0, b, 0)
			require.NoError(t, err, "the reset unpinned the old range")
			assert.Equal(t, 1, pinnedRanges.len())
			require.NoError(t, stale.Unregister(), "the stale handle forgets its range")
			assert.Equal(t, 1, pinnedRanges.len(), "and leaves the new one")
			assert.ErrorIs(t, stale.Unregister(), ErrNotRegistered, "once")
			require.NoError(t, g.Unregister())
			requireNothingPinned(t, f, nil)
		})
	}
}
