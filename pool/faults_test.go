package pool_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// faultStep is the part of a pool's life whose CUDA calls a sweep fails.
type faultStep int

const (
	stepNew faultStep = iota
	stepSatisfy
	stepRelease
	stepClose
)

func (s faultStep) String() string {
	return [...]string{"New", "Satisfy", "ReleaseAll", "Close"}[s]
}

// faultCode is what every injected failure returns: out of memory is what
// each allocating call reports most, and what callers most often match.
const faultCode cudart.Code = 2

// faultCase is one lifecycle of the sweep.
type faultCase struct {
	name string
	fake []cudarttest.Option
	opts []pool.Option
	step faultStep
	// prepare brings a fresh pool to where the step starts, and returns the
	// handles it made; nil for New, which starts from nothing.
	prepare func(t *testing.T, p *pool.Pool) []*pool.Buffer
	// hidden lists the calls whose failure the step legitimately hides,
	// each with a check of what the caller can see instead: a registration
	// that falls back to cudaHostAlloc, a failed lookup that is only logged,
	// a release that is retried later.
	hidden map[string]func(t *testing.T, p *pool.Pool, f *cudarttest.Fake)
}

// fellBack is the visible trace of a registration that failed: the host
// arena was pinned with cudaHostAlloc instead.
func fellBack(t *testing.T, p *pool.Pool, _ *cudarttest.Fake) {
	assert.Equal(t, pinned.MethodHostAlloc, p.Stats().HostPinning, "Stats().HostPinning says the registration fell back")
}

// registered checks that a failure that is only logged (the cudaDeviceMapHost
// lookup) changed nothing: the arena is still registered.
func registered(t *testing.T, p *pool.Pool, _ *cudarttest.Fake) {
	assert.Equal(t, pinned.MethodRegister, p.Stats().HostPinning)
}

// hostAllocated is registered for an arena pinned by cudaHostAlloc.
func hostAllocated(t *testing.T, p *pool.Pool, _ *cudarttest.Fake) {
	assert.Equal(t, pinned.MethodHostAlloc, p.Stats().HostPinning)
}

// releaseDeferred checks that physical memory whose cuMemRelease failed is
// still held, for the retry at the next growth or at Close: the leak check
// at the end of the test proves the retry happens.
func releaseDeferred(t *testing.T, p *pool.Pool, f *cudarttest.Fake) {
	assert.Greater(t, f.Live().PhysBytes, p.Stats().Device.Mapped, "the memory whose release failed is still held, to be retried")
}

// placeTwoGrowths places a 1 MiB buffer and then a 3 MiB one: with 2 MiB
// granules the growable arena maps two segments, so that trimming and
// closing take more than one step.
func placeTwoGrowths(t *testing.T, p *pool.Pool) []*pool.Buffer {
	a, err := p.WantDevice(mib, pool.Name("first"))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	b, err := p.WantDevice(3*mib, pool.Name("second"))
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	return []*pool.Buffer{a, b}
}

// reservedWants is p's WantDevice, WantHost and WantManaged, each where p
// took that arena.
func reservedWants(p *pool.Pool) []func(uint64, ...pool.WantOption) (*pool.Buffer, error) {
	st := p.Stats()
	var wants []func(uint64, ...pool.WantOption) (*pool.Buffer, error)
	for _, a := range []struct {
		reserved bool
		want     func(uint64, ...pool.WantOption) (*pool.Buffer, error)
	}{{st.Device.Reserved, p.WantDevice}, {st.Host.Reserved, p.WantHost}, {st.Managed.Reserved, p.WantManaged}} {
		if a.reserved {
			wants = append(wants, a.want)
		}
	}
	return wants
}

// placeInEveryArena places one buffer in each arena the pool took, and
// commits.
func placeInEveryArena(t *testing.T, p *pool.Pool) []*pool.Buffer {
	var out []*pool.Buffer
	for _, want := range reservedWants(p) {
		b, err := want(1000)
		require.NoError(t, err)
		out = append(out, b)
	}
	require.NoError(t, p.Commit())
	return out
}

func faultCases() []faultCase {
	twoDevices := []cudarttest.Option{cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1)}
	return []faultCase{
		// New: every arena kind and option that makes CUDA calls. New with
		// the default registered host arena is TestNewFaultSweep's.
		{name: "HostAlloc", step: stepNew,
			opts: []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc)}},
		{name: "RegisterNoHugePages", step: stepNew,
			opts:   []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodRegisterNoHugePages)},
			hidden: map[string]func(*testing.T, *pool.Pool, *cudarttest.Fake){"cudaHostRegister": fellBack}},
		{name: "RegisterMappedPortable", step: stepNew,
			opts: []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostFlags(pinned.Mapped | pinned.Portable)},
			hidden: map[string]func(*testing.T, *pool.Pool, *cudarttest.Fake){
				"cudaGetDeviceFlags": registered, "cudaHostRegister": fellBack, "cudaHostGetDevicePointer": fellBack}},
		{name: "HostAllocMapped", step: stepNew,
			opts:   []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithHostFlags(pinned.Mapped)},
			hidden: map[string]func(*testing.T, *pool.Pool, *cudarttest.Fake){"cudaGetDeviceFlags": hostAllocated}},
		{name: "WriteCombined", step: stepNew,
			opts: []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostFlags(pinned.WriteCombined)}},
		{name: "Managed", step: stepNew,
			opts: []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithManagedBytes(4 * mib)}},
		{name: "MallocHeap", step: stepNew,
			opts: []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithMallocHeap(16 * mib)}},
		{name: "GrowablePeers", step: stepNew, fake: twoDevices,
			opts: []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithPeerAccess(1), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc)}},
		{name: "Everything", step: stepNew, fake: twoDevices,
			opts: []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithPeerAccess(1), pool.WithHostBytes(mib), pool.WithHostFlags(pinned.Mapped),
				pool.WithManagedBytes(4 * mib), pool.WithMallocHeap(16 * mib)},
			hidden: map[string]func(*testing.T, *pool.Pool, *cudarttest.Fake){
				"cudaGetDeviceFlags": registered, "cudaHostRegister": fellBack, "cudaHostGetDevicePointer": fellBack}},

		// Satisfy on the growable arena, with a peer, and a host request
		// queued that must not be placed when the growth fails (the
		// single-device growth is TestGrowthFaultSweep's).
		{name: "GrowablePeersWithHostQueued", step: stepSatisfy, fake: twoDevices,
			opts: []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithPeerAccess(1), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc)},
			prepare: func(t *testing.T, p *pool.Pool) []*pool.Buffer {
				first, err := p.WantDevice(mib)
				require.NoError(t, err)
				require.NoError(t, p.Satisfy())
				big, err := p.WantDevice(20*mib, pool.Live(0, 3))
				require.NoError(t, err)
				h, err := p.WantHost(1000)
				require.NoError(t, err)
				return []*pool.Buffer{first, big, h}
			}},

		// ReleaseAll: the wait, and the trim of a growable arena mapped in
		// two growths.
		{name: "FixedWithManaged", step: stepRelease,
			opts:    []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithManagedBytes(mib)},
			prepare: placeInEveryArena},
		{name: "GrowableTrim", step: stepRelease,
			opts:    []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithHostBytes(0), pool.WithTrimOnRelease()},
			prepare: placeTwoGrowths,
			hidden:  map[string]func(*testing.T, *pool.Pool, *cudarttest.Fake){"cuMemRelease": releaseDeferred}},

		// Close: every kind of arena, each freed by its own call.
		{name: "FixedRegisteredManaged", step: stepClose,
			opts:    []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithManagedBytes(mib)},
			prepare: placeInEveryArena},
		{name: "FixedHostAllocMapped", step: stepClose,
			opts:    []pool.Option{pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithHostFlags(pinned.Mapped)},
			prepare: placeInEveryArena},
		{name: "GrowableTwoGrowths", step: stepClose,
			opts:    []pool.Option{pool.WithGrowableDevice(64 * mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc)},
			prepare: placeTwoGrowths},
	}
}

// TestFaultSweep runs each lifecycle once to record the CUDA calls its step
// makes, then once per call with that call failing. The failure must reach
// the caller wrapped (errors.As a *cudart.Error with the injected code),
// unless a fallback legitimately hides it; the pool must stay usable (New:
// nothing taken, and a retry works; Satisfy and ReleaseAll: nothing changed,
// and the step succeeds once the fault is gone) or close cleanly (Close: a
// second Close frees what the first could not); and the fake must report no
// leak at the end.
func TestFaultSweep(t *testing.T) {
	for _, c := range faultCases() {
		t.Run(c.step.String()+"/"+c.name, func(t *testing.T) {
			calls := c.probe(t)
			require.NotEmpty(t, calls, "the step makes no CUDA call: nothing to sweep")
			for i, call := range calls {
				t.Run(fmt.Sprintf("%d_%s", i+1, call), func(t *testing.T) { c.failAt(t, i+1, call) })
			}
		})
	}
}

// start makes the pool and brings it to the step, for every step but New.
func (c faultCase) start(t *testing.T, f *cudarttest.Fake) (*pool.Pool, []*pool.Buffer) {
	p, err := pool.New(f, c.opts...)
	require.NoError(t, err)
	var bufs []*pool.Buffer
	if c.prepare != nil {
		bufs = c.prepare(t, p)
	}
	return p, bufs
}

func (c faultCase) run(f *cudarttest.Fake, p *pool.Pool) (*pool.Pool, error) {
	switch c.step {
	case stepNew:
		return pool.New(f, c.opts...)
	case stepSatisfy:
		return p, p.Satisfy()
	case stepRelease:
		return p, p.ReleaseAll()
	}
	return p, p.Close()
}

// probe runs the lifecycle with no fault and returns the calls of its step.
func (c faultCase) probe(t *testing.T) []string {
	f := cudarttest.NewFakeT(t, append(c.fake, cudarttest.WithMemcheck())...)
	var p *pool.Pool
	if c.step != stepNew {
		p, _ = c.start(t, f)
	}
	f.ResetCalls()
	p, err := c.run(f, p)
	require.NoError(t, err)
	calls := f.Calls()
	require.NoError(t, p.Close())
	return calls
}

// failAt runs the lifecycle with the nth call of its step failing.
func (c faultCase) failAt(t *testing.T, n int, call string) {
	f := cudarttest.NewFakeT(t, append(c.fake, cudarttest.WithMemcheck())...)
	var p *pool.Pool
	var bufs []*pool.Buffer
	if c.step != stepNew {
		p, bufs = c.start(t, f)
	}
	var before pool.Stats
	var liveBefore cudarttest.Usage
	if p != nil {
		before, liveBefore = p.Stats(), f.Live()
	}
	f.ResetCalls()
	require.NoError(t, f.FailNth(n, faultCode))
	p, err := c.run(f, p)
	f.ClearFaults()
	require.GreaterOrEqual(t, len(f.Calls()), n, "the step made fewer calls than when probed")
	require.Equal(t, call, f.Calls()[n-1], "the step's calls changed since the probe")

	if err == nil {
		check, ok := c.hidden[call]
		require.True(t, ok, "%s: failing call %d (%s) went unnoticed", c.step, n, call)
		check(t, p, f)
		if c.step != stepClose {
			requireUsable(t, p, f, bufs)
			require.NoError(t, p.Close())
		}
		require.NoError(t, f.CheckLeaks())
		return
	}
	var ce *cudart.Error
	require.ErrorAs(t, err, &ce, "the CUDA error must reach the caller wrapped")
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Contains(t, err.Error(), call, "the error names the call that failed")

	switch c.step {
	case stepNew:
		require.Nil(t, p)
		require.True(t, f.Live().Empty(), "a failed New frees what it took: %v", f.CheckLeaks())
		p, err = c.run(f, nil)
		require.NoError(t, err, "New works once the fault is gone")
		requireUsable(t, p, f, nil)
	case stepSatisfy:
		require.Equal(t, before, p.Stats(), "a failed Satisfy places nothing and keeps the queue")
		require.Equal(t, liveBefore, f.Live(), "a failed growth leaves nothing behind")
		for _, b := range bufs[1:] {
			_, err := b.Ptr()
			require.ErrorIs(t, err, pool.ErrNotPlaced, "%s", b.Arena())
		}
		requireUsable(t, p, f, bufs)
	case stepRelease:
		st := p.Stats()
		if len(bufs) > 0 && isReleased(bufs[0]) {
			// A ReleaseAll may report a failure that came after it reset
			// (a trim that failed part way): then it must have reset it all.
			require.Zero(t, st.Device.Placed+st.Host.Placed+st.Managed.Placed)
			require.False(t, st.Committed)
		} else {
			require.Equal(t, before.Committed, st.Committed, "a failed ReleaseAll resets nothing")
			require.Equal(t, before.Device.Placed, st.Device.Placed, "a failed ReleaseAll resets nothing")
			// The buffers it kept must still be usable: every byte behind
			// them still mapped and writable.
			requireBacked(t, p, f, bufs)
		}
		require.NoError(t, p.ReleaseAll(), "ReleaseAll works once the fault is gone")
		requireUsable(t, p, f, bufs)
	case stepClose:
		require.True(t, p.Stats().Closed)
		require.NoError(t, p.Close(), "a second Close frees what the first could not")
		require.True(t, f.Live().Empty(), "Close returned nil, yet: %v", f.CheckLeaks())
		return
	}
	require.NoError(t, p.Close())
	require.True(t, f.Live().Empty(), "%v", f.CheckLeaks())
}

// requireBacked writes every byte of every buffer still placed: one whose
// memory is gone fails the write in the fake.
func requireBacked(t *testing.T, p *pool.Pool, f *cudarttest.Fake, bufs []*pool.Buffer) {
	t.Helper()
	st := p.Stats()
	for _, pl := range p.Layout() {
		require.LessOrEqual(t, pl.Offset+pl.Size, arenaStats(st, pl.Arena).Mapped, "%+v is placed in memory that is not mapped", pl)
	}
	for _, b := range bufs {
		if b.Arena() == pool.Host {
			hb, err := b.Bytes()
			if err == nil {
				clear(hb)
			}
			continue
		}
		ptr, err := b.Ptr()
		if err != nil {
			require.ErrorIs(t, err, pool.ErrNotPlaced)
			continue
		}
		require.NoError(t, f.Memset(p.Device(), ptr, 0x5a, b.Size()), "%s buffer at offset %d", b.Arena(), b.Offset())
	}
}

// requireUsable checks that the pool works: what was queued places, every
// buffer still current takes a write, and a new request in each arena is
// placed and written.
func requireUsable(t *testing.T, p *pool.Pool, f *cudarttest.Fake, bufs []*pool.Buffer) {
	t.Helper()
	require.NoError(t, p.Satisfy())
	st := p.Stats()
	if st.Committed {
		require.NoError(t, p.ReleaseAll())
		st = p.Stats()
	}
	for _, w := range []struct {
		reserved bool
		want     func(uint64, ...pool.WantOption) (*pool.Buffer, error)
	}{{st.Device.Reserved, p.WantDevice}, {st.Host.Reserved, p.WantHost}, {st.Managed.Reserved, p.WantManaged}} {
		if w.reserved {
			b, err := w.want(4096)
			require.NoError(t, err)
			bufs = append(bufs, b)
		}
	}
	require.NoError(t, p.Satisfy())
	var current []*pool.Buffer
	for _, b := range bufs {
		if !isReleased(b) {
			current = append(current, b)
		}
	}
	requireBacked(t, p, f, current)
	live := f.Live()
	requireHeld(t, f, p.Stats(), heldShape{growable: live.Reservations > 0, gran: 2 * mib, hostMapped: live.MappedHostAllocs > 0, deferred: true})
}

// isReleased says whether b is from before the last ReleaseAll.
func isReleased(b *pool.Buffer) bool {
	var err error
	if b.Arena() == pool.Host {
		_, err = b.Bytes()
	} else {
		_, err = b.Ptr()
	}
	return errors.Is(err, pool.ErrReleased)
}
