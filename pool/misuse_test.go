package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
	"github.com/cudapool/cudapool/vmem"
)

// misuseEnv is a pool with one placed buffer in each arena and one request
// still queued, brought to the state a misuse needs.
type misuseEnv struct {
	p                      *pool.Pool
	f                      *cudarttest.Fake
	dev, host, man, queued *pool.Buffer
}

// The states a misuse can happen in.
const (
	stateOpen      = ""          // placed and queued buffers, not committed
	stateCommitted = "committed" // Commit placed everything and locked the layout
	stateReleased  = "released"  // ReleaseAll made every handle stale
	stateClosed    = "closed"    // Close freed the arenas
	stateOverfull  = "overfull"  // the queue holds more than the device arena
)

// misuseArena is the size of each arena of the misuse pool.
const misuseArena = mib

func newMisuseEnv(t *testing.T, state string, opts ...pool.Option) *misuseEnv {
	t.Helper()
	f := cudarttest.NewFakeT(t)
	base := []pool.Option{pool.WithDeviceBytes(misuseArena), pool.WithHostBytes(misuseArena),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithManagedBytes(misuseArena)}
	p, err := pool.New(f, append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	e := &misuseEnv{p: p, f: f}
	st := p.Stats()
	if st.Device.Reserved {
		e.dev = mustWant(t, p.WantDevice, "dev")
	}
	if st.Host.Reserved {
		e.host = mustWant(t, p.WantHost, "host")
	}
	if st.Managed.Reserved {
		e.man = mustWant(t, p.WantManaged, "managed")
	}
	require.NoError(t, p.Satisfy())
	if st.Device.Reserved {
		e.queued = mustWant(t, p.WantDevice, "queued")
	}
	switch state {
	case stateCommitted:
		require.NoError(t, p.Commit())
	case stateReleased:
		require.NoError(t, p.ReleaseAll())
	case stateClosed:
		require.NoError(t, p.Close())
	case stateOverfull:
		for i := 0; i < 2; i++ {
			_, err := p.WantDevice(misuseArena*3/4, pool.Name("kv-cache"))
			require.NoError(t, err)
		}
	}
	return e
}

func mustWant(t *testing.T, want func(uint64, ...pool.WantOption) (*pool.Buffer, error), name string) *pool.Buffer {
	t.Helper()
	b, err := want(1000, pool.Name(name))
	require.NoError(t, err)
	return b
}

// wantErr, ptrErr and bytesErr keep a call's error, so that each row of the
// tables is one expression.
func wantErr(_ *pool.Buffer, err error) error { return err }

func ptrErr(_ cudart.DevicePtr, err error) error { return err }

func bytesErr(_ []byte, err error) error { return err }

// TestMisuseOfAPool is the README's table of misuses of a pool and its
// handles: each gets the sentinel it lists (errors.Is), and is refused
// without queueing, placing or allocating anything.
func TestMisuseOfAPool(t *testing.T) {
	noHost := []pool.Option{pool.WithHostBytes(0)}
	noDevice := []pool.Option{pool.WithDeviceBytes(0)}
	noManaged := []pool.Option{pool.WithManagedBytes(0)}
	tests := []struct {
		name  string
		state string
		opts  []pool.Option
		call  func(e *misuseEnv) error
		want  error // nil: the call must succeed
	}{
		{"zero size (device)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(0)) }, pool.ErrInvalidRequest},
		{"zero size (host)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(0)) }, pool.ErrInvalidRequest},
		{"zero size (managed)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantManaged(0)) }, pool.ErrInvalidRequest},
		{"size 2^64-1: overflows once aligned", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(^uint64(0))) }, pool.ErrInvalidRequest},
		{"size 2^64-255: overflows once aligned", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(^uint64(0) - 254)) }, pool.ErrInvalidRequest},
		{"size 2^64-256: aligns, larger than the arena", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(^uint64(0) - 255)) }, pool.ErrExhausted},
		{"size larger than the device arena", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(misuseArena + 1)) }, pool.ErrExhausted},
		{"size larger than the host arena", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(misuseArena + 1)) }, pool.ErrExhausted},
		{"queued requests larger than the arena: Satisfy", stateOverfull, nil, func(e *misuseEnv) error { return e.p.Satisfy() }, pool.ErrExhausted},
		{"queued requests larger than the arena: Commit", stateOverfull, nil, func(e *misuseEnv) error { return e.p.Commit() }, pool.ErrExhausted},
		{"Live(-1, 3)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(1, pool.Live(-1, 3))) }, pool.ErrInvalidRequest},
		{"Live(5, 3)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(1, pool.Live(5, 3))) }, pool.ErrInvalidRequest},
		{"Live(0, MaxStep+1)", stateOpen, nil, func(e *misuseEnv) error { return wantErr(e.p.WantManaged(1, pool.Live(0, pool.MaxStep+1))) }, pool.ErrInvalidRequest},
		{"WantHost with WithHostBytes(0)", stateOpen, noHost, func(e *misuseEnv) error { return wantErr(e.p.WantHost(1)) }, pool.ErrNoArena},
		{"WantDevice with WithDeviceBytes(0)", stateOpen, noDevice, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(1)) }, pool.ErrNoArena},
		{"WantManaged without WithManagedBytes", stateOpen, noManaged, func(e *misuseEnv) error { return wantErr(e.p.WantManaged(1)) }, pool.ErrNoArena},
		{"Bytes on a device buffer", stateOpen, nil, func(e *misuseEnv) error { return bytesErr(e.dev.Bytes()) }, pool.ErrWrongArena},
		{"Bytes on a managed buffer", stateOpen, nil, func(e *misuseEnv) error { return bytesErr(e.man.Bytes()) }, pool.ErrWrongArena},
		{"Ptr on a host buffer not pinned with pinned.Mapped", stateOpen, nil, func(e *misuseEnv) error { return ptrErr(e.host.Ptr()) }, pool.ErrWrongArena},
		{"Prefetch on a device buffer", stateOpen, nil, func(e *misuseEnv) error { return e.dev.Prefetch(0) }, pool.ErrWrongArena},
		{"Prefetch on a host buffer", stateOpen, nil, func(e *misuseEnv) error { return e.host.Prefetch(cudart.CPUDevice) }, pool.ErrWrongArena},
		{"Ptr before Satisfy", stateOpen, nil, func(e *misuseEnv) error { return ptrErr(e.queued.Ptr()) }, pool.ErrNotPlaced},
		{"Prefetch before Satisfy", stateOpen, nil, func(e *misuseEnv) error { return e.queued.Prefetch(0) }, pool.ErrNotPlaced},
		{"WantDevice after Commit", stateCommitted, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(1)) }, pool.ErrCommitted},
		{"WantHost after Commit", stateCommitted, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(1)) }, pool.ErrCommitted},
		{"WantManaged after Commit", stateCommitted, nil, func(e *misuseEnv) error { return wantErr(e.p.WantManaged(1)) }, pool.ErrCommitted},
		{"Satisfy after Commit (nothing to place)", stateCommitted, nil, func(e *misuseEnv) error { return e.p.Satisfy() }, nil},
		{"Ptr on a handle from before ReleaseAll", stateReleased, nil, func(e *misuseEnv) error { return ptrErr(e.dev.Ptr()) }, pool.ErrReleased},
		{"Bytes on a handle from before ReleaseAll", stateReleased, nil, func(e *misuseEnv) error { return bytesErr(e.host.Bytes()) }, pool.ErrReleased},
		{"Prefetch on a handle from before ReleaseAll", stateReleased, nil, func(e *misuseEnv) error { return e.man.Prefetch(0) }, pool.ErrReleased},
		{"Ptr on a request queued before ReleaseAll", stateReleased, nil, func(e *misuseEnv) error { return ptrErr(e.queued.Ptr()) }, pool.ErrReleased},
		{"WantDevice after Close", stateClosed, nil, func(e *misuseEnv) error { return wantErr(e.p.WantDevice(1)) }, pool.ErrClosed},
		{"WantHost after Close", stateClosed, nil, func(e *misuseEnv) error { return wantErr(e.p.WantHost(1)) }, pool.ErrClosed},
		{"WantManaged after Close", stateClosed, nil, func(e *misuseEnv) error { return wantErr(e.p.WantManaged(1)) }, pool.ErrClosed},
		{"Satisfy after Close", stateClosed, nil, func(e *misuseEnv) error { return e.p.Satisfy() }, pool.ErrClosed},
		{"Commit after Close", stateClosed, nil, func(e *misuseEnv) error { return e.p.Commit() }, pool.ErrClosed},
		{"ReleaseAll after Close", stateClosed, nil, func(e *misuseEnv) error { return e.p.ReleaseAll() }, pool.ErrClosed},
		{"Ptr after Close", stateClosed, nil, func(e *misuseEnv) error { return ptrErr(e.dev.Ptr()) }, pool.ErrClosed},
		{"Bytes after Close", stateClosed, nil, func(e *misuseEnv) error { return bytesErr(e.host.Bytes()) }, pool.ErrClosed},
		{"Prefetch after Close", stateClosed, nil, func(e *misuseEnv) error { return e.man.Prefetch(0) }, pool.ErrClosed},
		{"Close after Close", stateClosed, nil, func(e *misuseEnv) error { return e.p.Close() }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMisuseEnv(t, tt.state, tt.opts...)
			stats, layout, live := e.p.Stats(), e.p.Layout(), e.f.Live()
			err := tt.call(e)
			if tt.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.want)
				t.Log(err)
			}
			assert.Equal(t, stats, e.p.Stats(), "nothing queued, placed or reset")
			assert.Equal(t, layout, e.p.Layout())
			assert.Equal(t, live, e.f.Live(), "nothing allocated or freed")
		})
	}
}

// TestMisuseOfNew is the README's table of options New refuses: each gets
// the sentinel it lists, New returns no pool, and nothing stays allocated.
// Options checked by the packages the pool builds on (pinned, vmem) keep
// those packages' sentinels.
func TestMisuseOfNew(t *testing.T) {
	const fakeMemory = 16 * gib
	tests := []struct {
		name string
		fake []cudarttest.Option
		rt   func(f *cudarttest.Fake) cudart.Runtime // nil: the fake itself
		opts []pool.Option
		want error
	}{
		{"nil runtime", nil, func(*cudarttest.Fake) cudart.Runtime { return nil }, nil, pool.ErrInvalidOption},
		{"WithDevice(-1)", nil, nil, []pool.Option{pool.WithDevice(-1)}, pool.ErrInvalidOption},
		{"WithDevice(n) on a runtime with n devices", []cudarttest.Option{cudarttest.WithDevices(2)}, nil, []pool.Option{pool.WithDevice(2)}, pool.ErrInvalidOption},
		{"a runtime with no device", []cudarttest.Option{cudarttest.WithDevices(0)}, nil, nil, cudart.ErrNoDevice},
		{"WithPeerAccess without WithGrowableDevice", nil, nil, []pool.Option{pool.WithPeerAccess(1)}, pool.ErrInvalidOption},
		{"WithGrowableDevice on a runtime without virtual memory", nil, hideAbilities, []pool.Option{pool.WithGrowableDevice(gib)}, pool.ErrInvalidOption},
		{"WithManagedBytes on a runtime without managed memory", nil, hideAbilities, []pool.Option{pool.WithManagedBytes(mib)}, pool.ErrInvalidOption},
		{"WithMallocHeap on a runtime without device limits", nil, hideAbilities, []pool.Option{pool.WithMallocHeap(mib)}, pool.ErrInvalidOption},
		{"WithManagedBytes larger than the free device memory", nil, nil, []pool.Option{pool.WithManagedBytes(fakeMemory)}, pool.ErrInvalidOption},
		{"WithDeviceBytes larger than the device", nil, nil, []pool.Option{pool.WithDeviceBytes(fakeMemory + 1)}, cudart.ErrMemoryAllocation},
		{"WithDeviceBytes(2^64-1)", nil, nil, []pool.Option{pool.WithDeviceBytes(^uint64(0))}, cudart.ErrMemoryAllocation},
		{"WithHostBytes larger than the pinnable memory", []cudarttest.Option{cudarttest.WithHostMemory(gib)}, nil,
			[]pool.Option{pool.WithHostBytes(gib + 1), pool.WithHostPinning(pinned.MethodHostAlloc)}, cudart.ErrMemoryAllocation},
		{"WithHostBytes(2^64-1)", nil, nil, []pool.Option{pool.WithHostBytes(^uint64(0))}, pinned.ErrInvalidSize},
		{"WithHostPinning of an unknown method", nil, nil, []pool.Option{pool.WithHostPinning(pinned.Method(99))}, pinned.ErrInvalidOption},
		{"WithHostFlags with an unknown flag", nil, nil, []pool.Option{pool.WithHostFlags(0x80)}, pinned.ErrInvalidOption},
		{"WithGrowableDevice(2^64-1)", nil, nil, []pool.Option{pool.WithGrowableDevice(^uint64(0))}, vmem.ErrInvalidSize},
		{"WithPeerAccess(-1)", nil, nil, []pool.Option{pool.WithGrowableDevice(gib), pool.WithPeerAccess(-1)}, pool.ErrInvalidOption},
		{"WithPeerAccess of a device the runtime lacks", nil, nil, []pool.Option{pool.WithGrowableDevice(gib), pool.WithPeerAccess(5)}, pool.ErrInvalidOption},
		{"WithPeerAccess of the pool's own device", nil, nil, []pool.Option{pool.WithGrowableDevice(gib), pool.WithPeerAccess(0)}, pool.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t, append([]cudarttest.Option{cudarttest.WithDeviceMemory(fakeMemory)}, tt.fake...)...)
			var rt cudart.Runtime = f
			if tt.rt != nil {
				rt = tt.rt(f)
			}
			// Small arenas by default, so that only the option under test
			// can be what is refused.
			opts := append([]pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib)}, tt.opts...)
			p, err := pool.New(rt, opts...)
			require.ErrorIs(t, err, tt.want)
			t.Log(err)
			require.Nil(t, p)
			require.True(t, f.Live().Empty(), "a refused New holds nothing: %v", f.CheckLeaks())
		})
	}
}

// hideAbilities is the fake with only cudart.Runtime: an option that needs
// one of the optional abilities must be refused with ErrInvalidOption.
func hideAbilities(f *cudarttest.Fake) cudart.Runtime { return runtimeOnly{f} }

// TestMisuseCaughtLateOrNotAtAll pins down misuses that New or Want accept,
// or answer with another error than the caller would expect, so that a
// change to any of them is deliberate. Each is a gap the table
// lists; see the comment on each row.
func TestMisuseCaughtLateOrNotAtAll(t *testing.T) {
	t.Run("WithDeviceBytes below 256 takes an arena that no request fits", func(t *testing.T) {
		p, f := newPool(t, pool.WithDeviceBytes(255), pool.WithHostBytes(0))
		assert.Equal(t, 1, f.Live().DeviceAllocs)
		_, err := p.WantDevice(1)
		require.ErrorIs(t, err, pool.ErrExhausted)
	})
	t.Run("WithGrowableDevice(0) is a fixed arena of the default 4 GiB", func(t *testing.T) {
		p, f := newPool(t, pool.WithGrowableDevice(0), pool.WithHostBytes(0))
		assert.Equal(t, uint64(4*gib), f.Live().DeviceBytes)
		assert.Equal(t, uint64(4*gib), p.Stats().Device.Mapped)
	})
	t.Run("WithTrimOnRelease on a fixed arena is ignored", func(t *testing.T) {
		p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithTrimOnRelease())
		require.NoError(t, p.ReleaseAll())
		assert.Equal(t, uint64(mib), p.Stats().Device.Mapped)
	})
}

func TestCallsAfterCloseSayClosedFirst(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	_, err := p.WantDevice(1)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	require.NoError(t, p.Close())
	_, err = p.WantDevice(1, pool.Live(5, 3))
	assert.ErrorIs(t, err, pool.ErrClosed, "a closed pool says so before judging the request")
	assert.Empty(t, p.Layout(), "nothing is placed in a closed pool")
}
