package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestAPoolMadeBeforeAResetClosesOnce: after a sticky fault and the
// cudaDeviceReset that clears it, every call that would touch the arenas
// says the device was reset, Close says so once and forgets everything
// without touching what the reset destroyed, a second Close returns nil,
// and a pool with the same options works on the same runtime and a new one,
// for every kind of arena.
func TestAPoolMadeBeforeAResetClosesOnce(t *testing.T) {
	for _, c := range composeCases() {
		if c.lifetimes || c.mallocs {
			continue // no arena of their own
		}
		t.Run(c.String(), func(t *testing.T) {
			e := newComposeEnv(t, c)
			p, err := pool.New(e.f, e.options(t)...)
			require.NoError(t, err)
			bufs := composeWants(t, p, c)
			require.NoError(t, p.Commit())
			stickyFault(t, e.f)
			require.NoError(t, e.f.DeviceReset(0))
			e.stream = 0 // destroyed by the reset

			assert.ErrorIs(t, p.ReleaseAll(), pool.ErrDeviceReset)
			assert.ErrorIs(t, p.Satisfy(), pool.ErrDeviceReset)
			if c.guards {
				assert.ErrorIs(t, p.Check(), pool.ErrDeviceReset)
			}
			for _, b := range bufs {
				_, err = b.Ptr()
				assert.ErrorIs(t, err, pool.ErrDeviceReset, "a handle from before")
			}
			e.f.ResetCalls()
			err = p.Close()
			require.ErrorIs(t, err, pool.ErrDeviceReset)
			assert.ErrorContains(t, err, "device 0 was reset")
			for _, call := range e.f.Calls() {
				assert.Equal(t, "cuMemAddressFree", call, "Close calls CUDA only for the growable arena's address range")
			}
			require.NoError(t, p.Close(), "a second Close")
			assert.ErrorIs(t, p.ReleaseAll(), pool.ErrClosed)
			e.done(t)

			for _, e := range []*composeEnv{e, newComposeEnv(t, c)} {
				q, err := pool.New(e.f, e.options(t)...)
				require.NoError(t, err, "a new pool with the same options")
				e.cycle(t, q, 0)
				require.NoError(t, q.Close())
				e.synced(t, "Close")
				e.done(t)
			}
		})
	}
}

// stickyFault makes the device fault as a kernel writing to a bad address
// does: the error is sticky until cudaDeviceReset.
func stickyFault(t *testing.T, f *cudarttest.Fake) {
	t.Helper()
	scratch, err := f.Malloc(0, 256)
	require.NoError(t, err)
	require.NoError(t, f.FailAsync(0, cudart.ErrIllegalAddress.Code))
	require.NoError(t, f.Memset(0, scratch, 0, 256))
	require.ErrorIs(t, f.DeviceSynchronize(0), cudart.ErrIllegalAddress)
	require.ErrorIs(t, f.DeviceSynchronize(0), cudart.ErrIllegalAddress, "sticky")
}
