package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// newPool returns a pool on a fake that fails the test if anything is left
// allocated, and closes the pool at cleanup.
func newPool(t *testing.T, opts ...pool.Option) (*pool.Pool, *cudarttest.Fake) {
	t.Helper()
	return newPoolOn(t, cudarttest.NewFakeT(t), opts...)
}

// newUncheckedPool is newPool on a fake without memcheck, for tests that
// write or read outside live buffers on purpose: guards must see what
// memcheck would refuse first.
func newUncheckedPool(t *testing.T, opts ...pool.Option) (*pool.Pool, *cudarttest.Fake) {
	t.Helper()
	return newPoolOn(t, cudarttest.NewFakeT(t, cudarttest.WithoutMemcheck()), opts...)
}

// newSharingPair is newUncheckedPool with 256-byte guards and a device
// buffer living at steps 0..1 and another at 2..3, planned into the same
// bytes, as it requires.
func newSharingPair(t *testing.T, first string, firstSize uint64, second string, secondSize uint64) (*pool.Pool, *cudarttest.Fake, *pool.Buffer, *pool.Buffer) {
	t.Helper()
	p, f := newUncheckedPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithGuards(256))
	a := pooltest.Device(t, p, firstSize, pool.Name(first), pool.Live(0, 1))
	b := pooltest.Device(t, p, secondSize, pool.Name(second), pool.Live(2, 3))
	require.NoError(t, p.Satisfy())
	require.Equal(t, a.Offset(), b.Offset(), "the planner shares their bytes")
	return p, f, a, b
}

func newPoolOn(t *testing.T, f *cudarttest.Fake, opts ...pool.Option) (*pool.Pool, *cudarttest.Fake) {
	t.Helper()
	return pooltest.New(t, f, opts...), f
}

func TestNewDefaultsAreTheCppPools(t *testing.T) {
	// cudaMallocHost, as the C++ pool, so that the fake backs 8 GiB lazily.
	p, f := newPool(t, pool.WithHostPinning(pinned.MethodHostAlloc))
	st := p.Stats()
	assert.Equal(t, uint64(4*gib), st.Device.Capacity)
	assert.Equal(t, uint64(8*gib), st.Host.Capacity)
	live := f.Live()
	assert.Equal(t, 1, live.DeviceAllocs)
	assert.Equal(t, uint64(4*gib), live.DeviceBytes)
	assert.Equal(t, 1, live.HostAllocs)
	assert.Equal(t, uint64(8*gib), live.HostBytes)
}

func TestHostArenaIsRegisteredByDefault(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(4*mib))
	assert.Equal(t, pinned.MethodRegister, p.Stats().HostPinning)
	assert.Equal(t, uint64(4*mib), f.Live().RegisteredBytes)
	assert.Contains(t, f.Calls(), "cudaHostRegister")
	assert.NotContains(t, f.Calls(), "cudaMallocHost")
}

func TestMappedHostArenaHasADeviceAddress(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(4*mib), pool.WithHostFlags(pinned.Mapped))
	h := pooltest.Host(t, p, 1000, pool.Name("zero-copy"))
	require.NoError(t, p.Satisfy())
	ptr := pooltest.Ptr(t, h)
	require.NoError(t, f.Memset(0, ptr, 0x42, 1000), "a device write through the mapped address")
	hb := pooltest.Bytes(t, h)
	assert.Equal(t, bytes.Repeat([]byte{0x42}, 1000), hb, "is seen by the host: the same bytes")
}

func TestWriteCombinedHostArenaUsesHostAlloc(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostFlags(pinned.WriteCombined))
	assert.Equal(t, pinned.MethodHostAlloc, p.Stats().HostPinning)
	assert.Equal(t, 1, f.Live().HostAllocs)
}

func TestSatisfyPlacesInOrderAt256ByteOffsets(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(64*mib), pool.WithHostBytes(mib))
	sizes := []uint64{1, 256, 257, 1000, 4096, 3}
	want := []uint64{0, 256, 512, 1024, 2048, 6144}
	bufs := make([]*pool.Buffer, len(sizes))
	for i, s := range sizes {
		bufs[i] = pooltest.Device(t, p, s)
	}
	require.NoError(t, p.Satisfy())
	base, err := bufs[0].Ptr()
	require.NoError(t, err)
	for i, b := range bufs {
		assert.Equal(t, want[i], b.Offset(), "buffer %d", i)
		assert.Equal(t, sizes[i], b.Size())
		ptr := pooltest.Ptr(t, b)
		assert.Equal(t, base.Add(want[i]), ptr)
		assert.True(t, align.Is(uint64(ptr), align.CUDA))
	}
	st := p.Stats().Device
	assert.Equal(t, uint64(6144+256), st.Used)
	assert.Equal(t, uint64(1+256+257+1000+4096+3), st.Requested)
	assert.Equal(t, st.Unshared-st.Requested, st.Padding)
	assert.Equal(t, 6, st.Placed)

	// A second Satisfy places after the first batch; placed buffers stay.
	b := pooltest.Device(t, p, 10)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, uint64(6400), b.Offset())
	assert.Equal(t, want[5], bufs[5].Offset())
}

func TestExhaustionPlacesNothingAndKeepsTheQueue(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(4*mib), pool.WithHostBytes(4*mib))
	placed := pooltest.Device(t, p, mib, pool.Name("weights"))
	require.NoError(t, p.Satisfy())

	a := pooltest.Device(t, p, 2*mib, pool.Name("kv-cache"))
	b := pooltest.Device(t, p, 1536*1024, pool.Name("scratch"))
	h := pooltest.Host(t, p, mib, pool.Name("staging"))

	err := p.Satisfy()
	require.Error(t, err)
	assert.ErrorIs(t, err, pool.ErrExhausted)
	var ex *pool.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, pool.Device, ex.Arena)
	assert.Equal(t, uint64(4*mib), ex.Have)
	assert.Equal(t, uint64(mib+2*mib+1536*1024), ex.Need)
	assert.Equal(t, "kv-cache", ex.LargestName)
	assert.Equal(t, `pool: arena exhausted (device): need 4.5 MiB, have 4.0 MiB; largest pending: "kv-cache" 2.0 MiB`, err.Error())

	for _, q := range []*pool.Buffer{a, b, h} {
		_, err := q.Ptr()
		assert.ErrorIs(t, err, pool.ErrNotPlaced, "the host request must not be placed either")
	}
	st := p.Stats()
	assert.Equal(t, 2, st.Device.Queued)
	assert.Equal(t, 1, st.Host.Queued)
	assert.Equal(t, uint64(mib), st.Device.Used)
	_, err = placed.Ptr()
	assert.NoError(t, err)

	require.NoError(t, p.ReleaseAll())
	assert.Zero(t, p.Stats().Device.Queued)
}

func TestRequestBiggerThanTheArenaIsRefusedAtOnce(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	_, err := p.WantDevice(mib+1, pool.Name("too big"))
	var ex *pool.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, "too big", ex.LargestName)
	assert.Zero(t, p.Stats().Device.Queued)
}

func TestHandleLifecycle(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	d := pooltest.Device(t, p, 100, pool.Name("d"))
	h := pooltest.Host(t, p, 100, pool.Name("h"))

	_, err := d.Ptr()
	assert.ErrorIs(t, err, pool.ErrNotPlaced)
	_, err = h.Bytes()
	assert.ErrorIs(t, err, pool.ErrNotPlaced)

	require.NoError(t, p.Satisfy())
	_, err = d.Ptr()
	assert.NoError(t, err)
	hb := pooltest.Bytes(t, h)
	assert.Len(t, hb, 100)
	_, err = d.Bytes()
	assert.ErrorIs(t, err, pool.ErrWrongArena)
	_, err = h.Ptr()
	assert.ErrorIs(t, err, pool.ErrWrongArena)

	require.NoError(t, p.ReleaseAll())
	_, err = d.Ptr()
	assert.ErrorIs(t, err, pool.ErrReleased)
	_, err = h.Bytes()
	assert.ErrorIs(t, err, pool.ErrReleased)

	d2 := pooltest.Device(t, p, 100)
	require.NoError(t, p.Satisfy())
	assert.Zero(t, d2.Offset(), "ReleaseAll resets the arena to offset 0")

	require.NoError(t, p.Close())
	_, err = d2.Ptr()
	assert.ErrorIs(t, err, pool.ErrClosed)
}

func TestCommitLocksUntilReleaseAll(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	b := pooltest.Device(t, p, 10)
	require.NoError(t, p.Commit())
	_, err := b.Ptr()
	require.NoError(t, err, "Commit satisfies the queue")
	assert.True(t, p.Stats().Committed)

	_, err = p.WantDevice(10)
	assert.ErrorIs(t, err, pool.ErrCommitted)
	_, err = p.WantHost(10)
	assert.ErrorIs(t, err, pool.ErrCommitted)
	assert.NoError(t, p.Satisfy(), "Satisfy with nothing queued is a no-op")

	require.NoError(t, p.ReleaseAll())
	assert.False(t, p.Stats().Committed)
	_, err = p.WantDevice(10)
	assert.NoError(t, err)
}

func TestInvalidCalls(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"zero size", func() error { _, err := p.WantDevice(0); return err }, pool.ErrInvalidRequest},
		{"overflowing size", func() error { _, err := p.WantDevice(^uint64(0) - 3); return err }, pool.ErrInvalidRequest},
		{"lifetime backwards", func() error { _, err := p.WantDevice(1, pool.Live(5, 3)); return err }, pool.ErrInvalidRequest},
		{"negative step", func() error { _, err := p.WantDevice(1, pool.Live(-1, 3)); return err }, pool.ErrInvalidRequest},
		{"step too large", func() error { _, err := p.WantDevice(1, pool.Live(0, pool.MaxStep+1)); return err }, pool.ErrInvalidRequest},
		{"arena not reserved", func() error { _, err := p.WantHost(1); return err }, pool.ErrNoArena},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.Zero(t, p.Stats().Device.Queued, "nothing queued by a refused request")
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	_, err := pool.New(nil)
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = pool.New(f, pool.WithDevice(-1))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = pool.New(f, pool.WithDevice(2))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.ErrorContains(t, err, "2 device(s)")
}

func TestZeroSizedArenasAreNotTaken(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(0), pool.WithHostBytes(0))
	assert.Zero(t, f.Live().DeviceAllocs+f.Live().HostAllocs)
	assert.False(t, p.Stats().Device.Reserved)
	_, err := p.WantDevice(1)
	assert.ErrorIs(t, err, pool.ErrNoArena)
}

func TestCallsAfterCloseFail(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	assert.Zero(t, f.Live().DeviceAllocs+f.Live().HostAllocs)
	_, err := p.WantDevice(1)
	assert.ErrorIs(t, err, pool.ErrClosed)
	_, err = p.WantHost(1)
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.ErrorIs(t, p.Satisfy(), pool.ErrClosed)
	assert.ErrorIs(t, p.Commit(), pool.ErrClosed)
	assert.ErrorIs(t, p.ReleaseAll(), pool.ErrClosed)
	assert.True(t, p.Stats().Closed)
}

// TestNewFaultSweep fails each CUDA call New makes in turn: New must return
// an error wrapping the injected one and leave nothing allocated.
func TestNewFaultSweep(t *testing.T) {
	probe := cudarttest.NewFake()
	p, err := pool.New(probe, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	require.NoError(t, err)
	calls := probe.Calls()
	require.NoError(t, p.Close())
	require.NotEmpty(t, calls)
	for i, name := range calls {
		t.Run(name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			require.NoError(t, f.FailNth(i+1, 2))
			p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
			if name == "cudaHostRegister" {
				require.NoError(t, err, "a refused registration falls back to cudaHostAlloc")
				assert.Equal(t, pinned.MethodHostAlloc, p.Stats().HostPinning)
				require.NoError(t, p.Close())
				return
			}
			require.Error(t, err)
			var ce *cudart.Error
			assert.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
		})
	}
}

func TestReleaseAllWaitsForTheDeviceAndKeepsStateWhenThatFails(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	b := pooltest.Device(t, p, 10)
	require.NoError(t, p.Commit())

	require.NoError(t, f.FailCall("cudaDeviceSynchronize", 700))
	err := p.ReleaseAll()
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress)
	_, err = b.Ptr()
	assert.NoError(t, err, "a failed wait resets nothing")
	assert.True(t, p.Stats().Committed)

	f.ClearFaults()
	f.ResetCalls()
	require.NoError(t, p.ReleaseAll())
	assert.Contains(t, f.Calls(), "cudaDeviceSynchronize")
}

func TestCloseFaultIsRetried(t *testing.T) {
	for _, tt := range []struct {
		call   string
		method pinned.Method
	}{
		{"cudaFree", pinned.MethodRegister},
		{"cudaHostUnregister", pinned.MethodRegister},
		{"cudaFreeHost", pinned.MethodHostAlloc},
	} {
		call := tt.call
		t.Run(call, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			p, err := pool.New(f, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(tt.method))
			require.NoError(t, err)
			require.NoError(t, f.FailCall(call, 1))
			err = p.Close()
			assert.ErrorIs(t, err, cudart.ErrInvalidValue)
			f.ClearFaults()
			require.NoError(t, p.Close(), "a second Close frees what the first could not")
		})
	}
}

func TestSatisfyAndReleaseMakeNoAllocatingCUDACalls(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
	f.ResetCalls()
	pooltest.Device(t, p, 10)
	require.NoError(t, p.Satisfy())
	assert.Empty(t, f.Calls(), "placement is pure bookkeeping")
	require.NoError(t, p.ReleaseAll())
	assert.Equal(t, []string{"cudaDeviceSynchronize"}, f.Calls())
}

func TestLogs(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithLogger(zap.New(core)))
	for i := 0; i < 10; i++ {
		pooltest.Device(t, p, 10)
	}
	require.NoError(t, p.Commit())
	require.NoError(t, p.ReleaseAll())
	require.NoError(t, p.Close())
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
	}
	assert.Equal(t, []string{"pool: arenas reserved", "pool: closed"}, msgs,
		"Info only at New and Close")

	dcore, dlogs := observer.New(zapcore.DebugLevel)
	q, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithLogger(zap.New(dcore)))
	pooltest.Device(t, q, 10, pool.Name("x"))
	assert.Equal(t, 1, dlogs.FilterMessage("pool: request queued").Len())
}

func TestExhaustionIsLogged(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithLogger(zap.New(core)))
	for i := 0; i < 3; i++ {
		pooltest.Device(t, p, mib/2)
	}
	err := p.Satisfy()
	require.True(t, errors.Is(err, pool.ErrExhausted))
	assert.Equal(t, 1, logs.FilterMessage("pool: arena exhausted").Len())
}

func TestRequestSizeBoundaries(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(1000), pool.WithHostBytes(0))
	tests := []struct {
		size uint64
		fits bool
	}{
		{1, true}, {768, true}, {769, false}, {1000, false}, {^uint64(0), false},
	}
	for _, tt := range tests {
		_, err := p.WantDevice(tt.size)
		if tt.fits {
			assert.NoError(t, err, "size %d", tt.size)
		} else {
			assert.Error(t, err, "size %d", tt.size)
		}
	}
	err := p.Satisfy()
	require.ErrorIs(t, err, pool.ErrExhausted, "1 B at 0 and 768 B at 256 end at 1024 > 1000")
	require.NoError(t, p.ReleaseAll())
	pooltest.Device(t, p, 768)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, uint64(768), p.Stats().Device.Used)
}

func TestExhaustionSaysBytesWhenRoundingHidesTheDifference(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	_, err := p.WantDevice(mib + 1)
	require.ErrorIs(t, err, pool.ErrExhausted)
	assert.Equal(t, `pool: arena exhausted (device): need 1.0 MiB (1048832 B), have 1.0 MiB (1048576 B); "unnamed request of 1048577 B" alone is larger than the arena, not queued`, err.Error())
}

// A request larger than its whole arena is refused at once and not queued:
// the queue, and the Commit after it, go on as if it had not been asked.
func TestARequestLargerThanItsArenaIsNotQueued(t *testing.T) {
	for _, tt := range []struct {
		arena pool.Arena
		want  func(*pool.Pool, uint64, ...pool.WantOption) (*pool.Buffer, error)
	}{
		{pool.Device, (*pool.Pool).WantDevice},
		{pool.Host, (*pool.Pool).WantHost},
	} {
		t.Run(tt.arena.String(), func(t *testing.T) {
			p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib))
			small, err := tt.want(p, 256, pool.Name("small"))
			require.NoError(t, err)
			b, err := tt.want(p, 2*mib, pool.Name("big"))
			require.ErrorIs(t, err, pool.ErrExhausted)
			assert.Nil(t, b)
			var ex *pool.ExhaustedError
			require.ErrorAs(t, err, &ex)
			assert.Equal(t, "big", ex.LargestName)
			assert.Equal(t, fmt.Sprintf(`pool: arena exhausted (%s): need 2.0 MiB, have 1.0 MiB; "big" alone is larger than the arena, not queued`, tt.arena), err.Error())
			st := p.Stats().Device
			if tt.arena == pool.Host {
				st = p.Stats().Host
			}
			assert.Equal(t, 1, st.Queued, "only the small request is queued")
			require.NoError(t, p.Commit())
			assert.NoError(t, small.Placed(), "the small request is placed")
		})
	}
}
