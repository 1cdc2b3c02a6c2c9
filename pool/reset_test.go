package pool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestAPoolMadeBeforeAResetClosesOnce: after a cudaDeviceReset, every call
// that would touch the arenas says the device was reset, Close says so once,
// forgets what the reset freed without touching it, and frees what the
// reset left (a growable arena's virtual memory); a second Close returns
// nil. After a plain reset a pool with the same options works on the same
// runtime, and on a new one. After a fatal fault and the reset the device is
// lost: a growable arena can only be forgotten, a new pool on the same
// runtime fails with cudart.ErrDevicesUnavailable, and one on a new runtime
// (a new process) works. For every kind of arena.
func TestAPoolMadeBeforeAResetClosesOnce(t *testing.T) {
	for _, fatal := range []bool{false, true} {
		for _, c := range composeCases() {
			if c.lifetimes || c.mallocs {
				continue // no arena of their own
			}
			name := "plain/" + c.String()
			if fatal {
				name = "fatal/" + c.String()
			}
			t.Run(name, func(t *testing.T) { resetAndRecover(t, c, fatal) })
		}
	}
}

func resetAndRecover(t *testing.T, c composeCase, fatal bool) {
	e := newComposeEnv(t, c)
	p, err := pool.New(e.f, e.options(t)...)
	require.NoError(t, err)
	bufs := composeWants(t, p, c)
	require.NoError(t, p.Commit())
	if fatal {
		stickyFault(t, e.f)
	}
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
	growable := strings.HasPrefix(deviceKinds[c.device].name, "growable")
	if fatal && growable {
		assert.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "the growable arena could only be forgotten")
	}
	for _, call := range e.f.Calls() {
		assert.Contains(t, []string{"cuMemUnmap", "cuMemRelease", "cuMemAddressFree"}, call, "Close calls CUDA only for the growable arena's virtual memory")
	}
	assert.Equal(t, growable, len(e.f.Calls()) > 0, "and frees it, or tries to")
	require.NoError(t, p.Close(), "a second Close")
	assert.ErrorIs(t, p.ReleaseAll(), pool.ErrClosed)

	next := []*composeEnv{newComposeEnv(t, c)}
	if fatal {
		left := e.f.Live()
		left.PhysAllocs, left.PhysBytes, left.Reservations, left.ReservedBytes, left.Mappings, left.MappedBytes = 0, 0, 0, 0, 0, 0
		assert.True(t, left.Empty(), "nothing left on the lost device but the forgotten virtual memory: %+v", left)
		same := *e
		same.c.streams = false // a stream cannot be made on a lost device
		q, err := pool.New(e.f, same.options(t)...)
		if deviceKinds[c.device].name == "no-device" && hostKinds[c.host].name == "no-host" && !c.managed {
			require.NoError(t, err, "a pool with no arena calls no CUDA")
			assert.ErrorIs(t, q.Close(), cudart.ErrDevicesUnavailable, "but cannot wait for the device")
		} else {
			require.ErrorIs(t, err, cudart.ErrDevicesUnavailable, "a new pool in the same process")
		}
	} else {
		e.done(t)
		next = append(next, e)
	}
	for _, e := range next {
		q, err := pool.New(e.f, e.options(t)...)
		require.NoError(t, err, "a new pool with the same options")
		e.cycle(t, q, 0)
		require.NoError(t, q.Close())
		e.synced(t, "Close")
		e.done(t)
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
