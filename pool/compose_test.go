package pool_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// The dimensions of TestEveryCombinationOfOptionsComposes: each kind of
// device arena, each way of pinning the host arena, and the options that
// make the pool queue or order work of its own.
var (
	deviceKinds = []struct {
		name  string
		opts  []pool.Option
		peers bool // the fake needs a second device with peer access
	}{
		{"no-device", []pool.Option{pool.WithDeviceBytes(0)}, false},
		{"fixed", []pool.Option{pool.WithDeviceBytes(4 * mib)}, false},
		{"growable", []pool.Option{pool.WithGrowableDevice(64 * mib)}, false},
		{"growable-trim", []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithTrimOnRelease()}, false},
		{"growable-peers", []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithTrimOnRelease(), pool.WithPeerAccess(1)}, true},
	}
	hostKinds = []struct {
		name string
		opts []pool.Option
	}{
		{"no-host", []pool.Option{pool.WithHostBytes(0)}},
		{"registered", []pool.Option{pool.WithHostBytes(mib)}},
		{"hostalloc", []pool.Option{pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc)}},
		{"mapped", []pool.Option{pool.WithHostBytes(mib), pool.WithHostFlags(pinned.Mapped)}},
	}
)

// composeCase is one combination.
type composeCase struct {
	device, host                 int
	managed, guards, streams     bool
	lifetimes, memcheck, mallocs bool
}

func (c composeCase) String() string {
	name := deviceKinds[c.device].name + "/" + hostKinds[c.host].name
	for _, f := range []struct {
		on   bool
		name string
	}{{c.managed, "managed"}, {c.guards, "guards"}, {c.streams, "streams"}, {c.lifetimes, "steps"}, {c.memcheck, "memcheck"}, {c.mallocs, "heap"}} {
		if f.on {
			name += "+" + f.name
		}
	}
	return name
}

// composeCases is every combination of the dimensions.
func composeCases() []composeCase {
	var out []composeCase
	for d := range deviceKinds {
		for h := range hostKinds {
			for bits := range 1 << 6 {
				on := func(i int) bool { return bits&(1<<i) != 0 }
				out = append(out, composeCase{d, h, on(0), on(1), on(2), on(3), on(4), on(5)})
			}
		}
	}
	return out
}

// TestEveryCombinationOfOptionsComposes runs every combination of the pool's
// options through New, Want, Commit, writes, Step, Check, ReleaseAll (twice,
// so that a trimmed arena maps again) and Close on the strict fake, and
// synchronises the device after each step: the pool's own queued work (guard
// fills, poison) must never outlive the memory under it, which would leave a
// sticky fault, and Close must leave nothing behind.
func TestEveryCombinationOfOptionsComposes(t *testing.T) {
	for _, c := range composeCases() {
		t.Run(c.String(), func(t *testing.T) {
			e := newComposeEnv(t, c)
			p, err := pool.New(e.f, e.options(t)...)
			require.NoError(t, err)
			e.synced(t, "New")
			for round := range 2 {
				e.cycle(t, p, round)
			}
			require.NoError(t, p.Close())
			e.synced(t, "Close")
			require.NoError(t, p.Close(), "a second Close")
			e.done(t)
		})
	}
}

// composeEnv is a strict fake made for a case, and the stream the case's
// pools wait for.
type composeEnv struct {
	c       composeCase
	f       *cudarttest.Fake
	devices int
	stream  cudart.Stream // 0 unless c.streams
}

func newComposeEnv(t *testing.T, c composeCase) *composeEnv {
	fakeOpts := []cudarttest.Option{cudarttest.WithDeviceMemory(gib)}
	e := &composeEnv{c: c, devices: 1}
	if deviceKinds[c.device].peers {
		e.devices = 2
		fakeOpts = append(fakeOpts, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	}
	if c.memcheck {
		fakeOpts = append(fakeOpts, cudarttest.WithMemcheck())
	}
	e.f = cudarttest.NewFake(fakeOpts...)
	return e
}

// options are the case's pool options, with a new stream when the case
// waits for one.
func (e *composeEnv) options(t *testing.T) []pool.Option {
	c := e.c
	opts := append(append([]pool.Option{}, deviceKinds[c.device].opts...), hostKinds[c.host].opts...)
	if c.streams {
		var err error
		e.stream, err = e.f.StreamCreate(0)
		require.NoError(t, err)
		opts = append(opts, pool.WithStreams(e.stream))
	}
	if c.managed {
		opts = append(opts, pool.WithManagedBytes(mib))
	}
	if c.guards {
		opts = append(opts, pool.WithGuards(256))
	}
	if c.mallocs {
		opts = append(opts, pool.WithMallocHeap(16*mib))
	}
	return opts
}

// synced fails t unless every device synchronises without error.
func (e *composeEnv) synced(t *testing.T, after string) {
	t.Helper()
	for d := range e.devices {
		require.NoError(t, e.f.DeviceSynchronize(d), "device %d after %s: no sticky error", d, after)
	}
}

// cycle runs one round of Want, Commit, writes, Step, Check and
// ReleaseAll, synchronising after each.
func (e *composeEnv) cycle(t *testing.T, p *pool.Pool, round int) {
	t.Helper()
	bufs := composeWants(t, p, e.c)
	e.synced(t, "Want")
	require.NoError(t, p.Commit())
	e.synced(t, "Commit")
	for i, b := range bufs {
		composeRoundTrip(t, e.f, b, e.stream, byte(16*round+i+1))
	}
	e.synced(t, "writes")
	if e.c.lifetimes && len(bufs) > 0 {
		require.NoError(t, p.Step(0))
		require.NoError(t, p.Step(1))
		e.synced(t, "Step")
	}
	if e.c.guards && len(bufs) > 0 {
		require.NoError(t, p.Check())
		e.synced(t, "Check")
	}
	require.NoError(t, p.ReleaseAll())
	e.synced(t, "ReleaseAll")
}

// done destroys the stream and fails t if anything is left.
func (e *composeEnv) done(t *testing.T) {
	t.Helper()
	if e.stream != 0 {
		require.NoError(t, e.f.StreamDestroy(0, e.stream))
	}
	require.NoError(t, e.f.CheckLeaks())
}

// composeWants queues three buffers in every arena the pool has, with
// lifetimes that share bytes when the case has them.
func composeWants(t *testing.T, p *pool.Pool, c composeCase) []*pool.Buffer {
	t.Helper()
	var bufs []*pool.Buffer
	for _, want := range reservedWants(p) {
		for i, size := range []uint64{1, 300, 4097} {
			var opts []pool.WantOption
			if c.lifetimes {
				opts = append(opts, pool.Live(i/2, i/2+i%2))
			}
			b, err := want(size, opts...)
			require.NoError(t, err)
			bufs = append(bufs, b)
		}
	}
	return bufs
}

// composeRoundTrip writes a pattern into b and reads it back: through the
// host view of a host buffer, else by copies, on stream when the case has
// one.
func composeRoundTrip(t *testing.T, f *cudarttest.Fake, b *pool.Buffer, stream cudart.Stream, seed byte) {
	t.Helper()
	want := bytes.Repeat([]byte{seed}, int(b.Size()))
	if h, err := b.Bytes(); err == nil {
		copy(h, want)
		require.Equal(t, want, h)
		return
	}
	ptr, err := b.Ptr()
	require.NoError(t, err)
	got := make([]byte, len(want))
	dev, host := cudart.DeviceMem(ptr, b.Size()), cudart.HostMem(got)
	if stream != 0 {
		require.NoError(t, f.MemcpyAsync(0, dev, cudart.HostMem(want), cudart.Default, stream))
		require.NoError(t, f.MemcpyAsync(0, host, dev, cudart.Default, stream))
		require.NoError(t, f.StreamSynchronize(0, stream))
	} else {
		require.NoError(t, f.Memcpy(0, dev, cudart.HostMem(want), cudart.Default))
		require.NoError(t, f.Memcpy(0, host, dev, cudart.Default))
	}
	require.Equal(t, want, got, fmt.Sprintf("%d bytes through the device", b.Size()))
}

// TestCloseAfterAFailedWaitRunsThePoolsFillsFirst: when Close's wait fails
// without faulting the device (a stream destroyed under the pool, a
// synchronisation that failed once), the guard fills Satisfy queued still
// run before the growable arena is unmapped under them.
func TestCloseAfterAFailedWaitRunsThePoolsFillsFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, f *cudarttest.Fake, s cudart.Stream)
		want  string
	}{
		{"destroyed stream", func(t *testing.T, f *cudarttest.Fake, s cudart.Stream) {
			require.NoError(t, f.StreamDestroy(0, s))
		}, "cudaEventRecord"},
		{"failed synchronisation", func(t *testing.T, f *cudarttest.Fake, s cudart.Stream) {
			require.NoError(t, f.FailCallNth("cudaEventSynchronize", 1, 999))
			t.Cleanup(func() { require.NoError(t, f.StreamDestroy(0, s)) })
		}, "cudaEventSynchronize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			s, err := f.StreamCreate(0)
			require.NoError(t, err)
			p, err := pool.New(f, pool.WithGrowableDevice(64*mib), pool.WithHostBytes(0), pool.WithGuards(256), pool.WithStreams(s))
			require.NoError(t, err)
			_, err = p.WantDevice(1)
			require.NoError(t, err)
			require.NoError(t, p.Satisfy())
			tc.spoil(t, f, s)
			err = p.Close()
			require.ErrorContains(t, err, tc.want, "Close says which wait failed")
			require.NoError(t, f.DeviceSynchronize(0), "no fill ran on unmapped memory")
			require.NoError(t, p.Close(), "everything was freed the first time")
		})
	}
}
