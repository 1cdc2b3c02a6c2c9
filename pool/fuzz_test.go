package pool_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// FuzzPool decodes bytes into a pool on the fake and a sequence of
// operations on it, and checks the pool's invariants after every one:
// placements aligned, inside their arena and backed by mapped memory, never
// overlapping a buffer alive at the same time; every handle answering as
// its state says (stale handles refused with ErrReleased, then ErrClosed);
// bytes written through one handle never showing up in another that the
// layout says is separate; and the fake holding exactly what the pool says
// it holds, nothing once Close returned nil.
//
// Byte 0 picks the configuration (the fuzzCfg bits); every 4 bytes after it
// are one operation (fuzzRun.step), at most fuzzMaxOps of them.
func FuzzPool(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := newFuzzRun(t, data[0])
		for ops := data[1:]; len(ops) >= 4 && r.steps < fuzzMaxOps; ops = ops[4:] {
			r.step(ops[0], ops[1], ops[2], ops[3])
		}
		r.finish()
	})
}

// The bits of the configuration byte.
const (
	fuzzCfgGrowable   = 1 << 0 // growable device arena instead of a fixed one
	fuzzCfgHostShift  = 1      // bits 1-2: no host arena, cudaHostAlloc, Register, RegisterNoHugePages
	fuzzCfgTrim       = 1 << 3 // WithTrimOnRelease
	fuzzCfgManaged    = 1 << 4 // a managed arena
	fuzzCfgHostMapped = 1 << 5 // WithHostFlags(pinned.Mapped): host buffers have a device address
	fuzzCfgSmallGran  = 1 << 6 // 64 KiB granules: more segments for the growable arena to map and trim
	fuzzCfgNoDevice   = 1 << 7 // no fixed device arena (ignored for a growable one)
)

// Arena sizes: a few MiB at most, so that one input runs in microseconds to
// milliseconds. The registered host arena is smaller still, since
// registering touches every page.
const (
	fuzzFixedDevice    = 4 * mib
	fuzzGrowableMax    = 8 * mib
	fuzzHostAlloc      = mib
	fuzzHostRegistered = 256 << 10
	fuzzManaged        = mib
	fuzzMaxOps         = 64
)

// fuzzCodes are the CUDA errors an armed fault injects.
var fuzzCodes = []cudart.Code{2, 1, 700, 999}

// fuzzBuf is what the model knows of one handle the pool gave out.
type fuzzBuf struct {
	b       *pool.Buffer
	arena   pool.Arena
	size    uint64
	gen     int
	placed  bool
	written bool // pattern was written through the handle and nothing overlapping was written since
	pattern byte
}

// fuzzRun is the model of one pool: what the pool must answer, given the
// operations so far.
type fuzzRun struct {
	t *testing.T
	f *cudarttest.Fake
	p *pool.Pool

	growable, trim, hostMapped bool
	gran                       uint64
	caps                       [3]uint64 // 0 where the arena was not taken

	gen               int
	committed, closed bool
	closeFailed       bool // the last Close failed: the pool may still hold memory
	faultFired        bool // some injected fault fired: a deferred cleanup may hold memory
	armed             int  // the armed fault fires at this call of the next operation; 0 when none
	armedCode         cudart.Code
	bufs              []*fuzzBuf
	steps             int

	// The address of byte 0 of each arena as seen through the handles:
	// Bytes for the host view, Ptr for device addresses.
	hostView      uintptr
	hostViewKnown bool
	devBase       [3]uintptr
	devBaseKnown  [3]bool
}

func newFuzzRun(t *testing.T, cfg byte) *fuzzRun {
	r := &fuzzRun{t: t, growable: cfg&fuzzCfgGrowable != 0, trim: cfg&fuzzCfgTrim != 0, hostMapped: cfg&fuzzCfgHostMapped != 0, gran: 2 * mib}
	var fakeOpts []cudarttest.Option
	if cfg&fuzzCfgSmallGran != 0 {
		r.gran = 64 << 10
		fakeOpts = append(fakeOpts, cudarttest.WithGranularity(r.gran))
	}
	r.f = cudarttest.NewFake(append(fakeOpts, cudarttest.WithMemcheck())...)
	var opts []pool.Option
	switch {
	case r.growable:
		opts = append(opts, pool.WithGrowableDevice(fuzzGrowableMax))
		r.caps[pool.Device] = fuzzGrowableMax
	case cfg&fuzzCfgNoDevice != 0:
		opts = append(opts, pool.WithDeviceBytes(0))
	default:
		opts = append(opts, pool.WithDeviceBytes(fuzzFixedDevice))
		r.caps[pool.Device] = fuzzFixedDevice
	}
	if r.trim {
		opts = append(opts, pool.WithTrimOnRelease())
	}
	// cudaHostAlloc touches nothing; the registering methods are the
	// default and must be fuzzed too, at sizes where touching is cheap.
	switch (cfg >> fuzzCfgHostShift) & 3 {
	case 0:
		opts = append(opts, pool.WithHostBytes(0))
	case 1:
		opts = append(opts, pool.WithHostBytes(fuzzHostAlloc), pool.WithHostPinning(pinned.MethodHostAlloc))
		r.caps[pool.Host] = fuzzHostAlloc
	case 2:
		opts = append(opts, pool.WithHostBytes(fuzzHostRegistered))
		r.caps[pool.Host] = fuzzHostRegistered
	case 3:
		opts = append(opts, pool.WithHostBytes(fuzzHostRegistered/2), pool.WithHostPinning(pinned.MethodRegisterNoHugePages))
		r.caps[pool.Host] = fuzzHostRegistered / 2
	}
	if r.hostMapped {
		opts = append(opts, pool.WithHostFlags(pinned.Mapped))
	}
	if cfg&fuzzCfgManaged != 0 {
		opts = append(opts, pool.WithManagedBytes(fuzzManaged))
		r.caps[pool.Managed] = fuzzManaged
	}
	p, err := pool.New(r.f, opts...)
	require.NoError(t, err)
	r.p = p
	// An input that fails half way must not leave memory pinned for the
	// inputs after it; finish checks the Close of a run that completes.
	t.Cleanup(func() { _ = p.Close() })
	r.check()
	return r
}

// step runs one operation and checks the invariants. op%16 picks it:
//
//	0-3    WantDevice(fuzzSize(x, y), fuzzLife(z))
//	4-5    WantHost, the same
//	6      WantManaged, the same
//	7-8    Satisfy
//	9      Commit
//	10     ReleaseAll
//	11     Close
//	12-14  handle number x (of all ever made): Ptr, Bytes or Prefetch as y%3
//	       says, then a write of z|1 through the address or view it gives
//	15     arm a fault for the next operation: its (x%4+1)th CUDA call
//	       fails with fuzzCodes[y%4]
func (r *fuzzRun) step(op, x, y, z byte) {
	r.steps++
	switch op % 16 {
	case 0, 1, 2, 3:
		r.want(pool.Device, x, y, z)
	case 4, 5:
		r.want(pool.Host, x, y, z)
	case 6:
		r.want(pool.Managed, x, y, z)
	case 7, 8:
		r.satisfy(false)
	case 9:
		r.satisfy(true)
	case 10:
		r.release()
	case 11:
		r.close()
	case 12, 13, 14:
		r.use(x, y, z)
	case 15:
		// The fault fires at the (x%4+1)th CUDA call of the next
		// operation, if it makes that many, and is cleared after it.
		r.armed = int(x%4) + 1
		r.armedCode = fuzzCodes[int(y)%len(fuzzCodes)]
	}
	r.check()
}

// call runs one pool call with the armed fault, if any, and clears it before
// the test makes CUDA calls of its own. It reports whether the fault fired.
func (r *fuzzRun) call(fn func() error) (error, bool) {
	if r.armed == 0 {
		return fn(), false
	}
	r.f.ClearFaults()
	r.f.ResetCalls()
	require.NoError(r.t, r.f.FailNth(r.armed, r.armedCode))
	err := fn()
	fired := len(r.f.Calls()) >= r.armed
	r.f.ClearFaults()
	r.armed = 0
	r.faultFired = r.faultFired || fired
	return err, fired
}

// requireCUDA checks that err carries the injected CUDA error.
func (r *fuzzRun) requireCUDA(err error, code cudart.Code) {
	r.t.Helper()
	var ce *cudart.Error
	require.ErrorAs(r.t, err, &ce, "a failed CUDA call must reach the caller wrapped")
	require.Equal(r.t, code, ce.Code, "%v", err)
}

// fuzzSize decodes a request size: mostly 1 B to 1 MiB, and the edges.
func fuzzSize(x, y byte) uint64 {
	switch x {
	case 0:
		return 0
	case 255:
		return ^uint64(0)
	case 254:
		return ^uint64(0) - (align.CUDA - 1) // the largest size that aligns without overflow
	case 253:
		return 1 << 40
	case 252:
		return fuzzFixedDevice
	case 251:
		return fuzzFixedDevice + 1
	}
	return (uint64(y) + 1) << (x % 13)
}

// fuzzLife decodes a lifetime: none (the whole plan) below 128, a short one
// among steps 0 to 18, or an edge; bad says Live must refuse it.
func fuzzLife(z byte) (opt pool.WantOption, bad bool) {
	switch {
	case z < 128:
		return nil, false
	case z == 255:
		return pool.Live(5, 3), true
	case z == 254:
		return pool.Live(-1, 0), true
	case z == 253:
		return pool.Live(0, pool.MaxStep+1), true
	case z == 252:
		return pool.Live(pool.MaxStep, pool.MaxStep), false
	}
	first := int(z & 15)
	return pool.Live(first, first+int(z>>4&3)), false
}

// wantRefusal is the sentinel a request must get, in the order the pool
// checks: the options first, then closed, size, committed, arena, room.
func (r *fuzzRun) wantRefusal(kind pool.Arena, size uint64, badLife bool) error {
	switch {
	case r.closed:
		return pool.ErrClosed
	case badLife:
		return pool.ErrInvalidRequest
	case size == 0, size > ^uint64(0)-(align.CUDA-1):
		return pool.ErrInvalidRequest
	case r.committed:
		return pool.ErrCommitted
	case r.caps[kind] == 0:
		return pool.ErrNoArena
	case size > r.caps[kind]&^(align.CUDA-1):
		return pool.ErrExhausted
	}
	return nil
}

func (r *fuzzRun) want(kind pool.Arena, x, y, z byte) {
	t := r.t
	size := fuzzSize(x, y)
	life, badLife := fuzzLife(z)
	opts := []pool.WantOption{pool.Name(fmt.Sprintf("b%d", len(r.bufs)))}
	if life != nil {
		opts = append(opts, life)
	}
	before := r.p.Stats()
	var b *pool.Buffer
	err, _ := r.call(func() error {
		var err error
		switch kind {
		case pool.Device:
			b, err = r.p.WantDevice(size, opts...)
		case pool.Host:
			b, err = r.p.WantHost(size, opts...)
		default:
			b, err = r.p.WantManaged(size, opts...)
		}
		return err
	})
	if want := r.wantRefusal(kind, size, badLife); want != nil {
		require.ErrorIs(t, err, want, "%s request of %d bytes", kind, size)
		require.Nil(t, b)
		require.Equal(t, before, r.p.Stats(), "a refused request changes nothing")
		return
	}
	require.NoError(t, err, "%s request of %d bytes", kind, size)
	require.Equal(t, size, b.Size())
	require.Equal(t, kind, b.Arena())
	r.bufs = append(r.bufs, &fuzzBuf{b: b, arena: kind, size: size, gen: r.gen})
}

func (r *fuzzRun) satisfy(commit bool) {
	t := r.t
	before, layoutBefore, liveBefore := r.p.Stats(), r.p.Layout(), r.f.Live()
	faultedBefore := r.faultFired
	code := r.armedCode
	err, fired := r.call(func() error {
		if commit {
			return r.p.Commit()
		}
		return r.p.Satisfy()
	})
	switch {
	case r.closed:
		require.ErrorIs(t, err, pool.ErrClosed)
		return
	case err == nil:
		for _, fb := range r.bufs {
			if fb.gen == r.gen {
				fb.placed = true
			}
		}
		r.committed = r.committed || commit
		return
	case errors.Is(err, pool.ErrExhausted):
		var ex *pool.ExhaustedError
		require.ErrorAs(t, err, &ex)
		require.Greater(t, ex.Need, ex.Have, "%v", err)
	default:
		require.True(t, fired, "Satisfy failed with no fault injected: %v", err)
		r.requireCUDA(err, code)
		if !faultedBefore {
			// A cleanup deferred by an earlier fault may be retried, and
			// succeed, during a growth that fails.
			require.Equal(t, liveBefore, r.f.Live(), "a failed growth leaves nothing behind")
		}
	}
	require.Equal(t, before, r.p.Stats(), "a failed Satisfy places nothing and keeps the queue")
	require.Equal(t, layoutBefore, r.p.Layout())
}

func (r *fuzzRun) release() {
	t := r.t
	if !r.closed {
		r.verify()
	}
	before := r.p.Stats()
	code := r.armedCode
	err, fired := r.call(r.p.ReleaseAll)
	switch {
	case r.closed:
		require.ErrorIs(t, err, pool.ErrClosed)
	case err == nil:
		r.gen++
		r.committed = false
		st := r.p.Stats()
		for _, a := range []pool.ArenaStats{st.Device, st.Host, st.Managed} {
			require.Zero(t, a.Placed+a.Queued)
			require.Zero(t, a.Used)
		}
		if r.growable && r.trim {
			require.Zero(t, st.Device.Mapped, "WithTrimOnRelease gives every mapped byte back")
		}
	default:
		require.True(t, fired, "ReleaseAll failed with no fault injected: %v", err)
		r.requireCUDA(err, code)
		if r.releasedAnyway(before) {
			// A release that failed after it reset (a trim that failed
			// part way may be reported so) must reset everything.
			r.gen++
			r.committed = false
			return
		}
		st := r.p.Stats()
		require.Equal(t, before.Committed, st.Committed, "a failed ReleaseAll resets nothing")
		for _, k := range []pool.Arena{pool.Device, pool.Host, pool.Managed} {
			require.Equal(t, arenaStats(before, k).Placed, arenaStats(st, k).Placed, "%s: a failed ReleaseAll resets nothing", k)
			require.Equal(t, arenaStats(before, k).Queued, arenaStats(st, k).Queued, "%s: a failed ReleaseAll resets nothing", k)
		}
		// check() then proves that the buffers still placed are still
		// backed by mapped memory.
	}
}

// releasedAnyway says whether a ReleaseAll that returned an error reset the
// pool all the same: its handles are stale, or the commit was undone.
func (r *fuzzRun) releasedAnyway(before pool.Stats) bool {
	if before.Committed && !r.p.Stats().Committed {
		return true
	}
	for _, fb := range r.bufs {
		if fb.gen == r.gen {
			_, err := fb.b.Ptr()
			return errors.Is(err, pool.ErrReleased)
		}
	}
	return false
}

func (r *fuzzRun) close() {
	t := r.t
	if !r.closed {
		r.verify()
	}
	code := r.armedCode
	err, fired := r.call(r.p.Close)
	r.closed = true
	if err == nil {
		r.closeFailed = false
		return
	}
	require.True(t, fired, "Close failed with no fault injected: %v", err)
	r.requireCUDA(err, code)
	r.closeFailed = true
}

// use calls Ptr, Bytes or Prefetch on a handle and, when the pool hands out
// an address, writes a pattern through it.
func (r *fuzzRun) use(x, y, z byte) {
	t := r.t
	if len(r.bufs) == 0 {
		return
	}
	fb := r.bufs[int(x)%len(r.bufs)]
	pattern := z | 1 // never 0, the fake's fresh memory
	code := r.armedCode
	switch y % 3 {
	case 0:
		var ptr cudart.DevicePtr
		err, _ := r.call(func() error {
			var err error
			ptr, err = fb.b.Ptr()
			return err
		})
		if want := r.useRefusal(fb, fb.arena == pool.Host && !r.hostMapped); want != nil {
			require.ErrorIs(t, err, want, "Ptr of %s", fb.b.Name())
			return
		}
		require.NoError(t, err, "Ptr of %s", fb.b.Name())
		r.sameBase(fb, uintptr(ptr), true)
		require.NoError(t, r.f.Memset(r.p.Device(), ptr, pattern, fb.size), "%s: the address Ptr gives is writable for Size bytes", fb.b.Name())
		r.wrote(fb, pattern)
	case 1:
		var hb []byte
		err, _ := r.call(func() error {
			var err error
			hb, err = fb.b.Bytes()
			return err
		})
		if want := r.useRefusal(fb, fb.arena != pool.Host); want != nil {
			require.ErrorIs(t, err, want, "Bytes of %s", fb.b.Name())
			return
		}
		require.NoError(t, err, "Bytes of %s", fb.b.Name())
		require.Len(t, hb, int(fb.size))
		r.sameBase(fb, reflect.ValueOf(hb).Pointer(), false)
		for i := range hb {
			hb[i] = pattern
		}
		r.wrote(fb, pattern)
	default:
		dst := 0
		if z&1 == 0 {
			dst = cudart.CPUDevice
		}
		err, fired := r.call(func() error { return fb.b.Prefetch(dst) })
		if want := r.useRefusal(fb, fb.arena != pool.Managed); want != nil {
			require.ErrorIs(t, err, want, "Prefetch of %s", fb.b.Name())
			return
		}
		if fired {
			r.requireCUDA(err, code)
			return
		}
		require.NoError(t, err, "Prefetch of %s", fb.b.Name())
	}
}

// useRefusal is the sentinel Ptr, Bytes or Prefetch must return on fb, where
// wrongArena says the call does not apply to fb's arena.
func (r *fuzzRun) useRefusal(fb *fuzzBuf, wrongArena bool) error {
	switch {
	case r.closed:
		return pool.ErrClosed
	case fb.gen != r.gen:
		return pool.ErrReleased
	case !fb.placed:
		return pool.ErrNotPlaced
	case wrongArena:
		return pool.ErrWrongArena
	}
	return nil
}

// sameBase checks that the address a handle gives, less its offset, is the
// same for every buffer of its arena: addresses agree with Layout's offsets,
// so the overlap check on offsets is a check on memory.
func (r *fuzzRun) sameBase(fb *fuzzBuf, addr uintptr, device bool) {
	base := addr - uintptr(fb.b.Offset())
	if !device {
		if !r.hostViewKnown {
			r.hostView, r.hostViewKnown = base, true
		}
		require.Equal(r.t, r.hostView, base, "%s: Bytes is not at the arena's start plus Offset", fb.b.Name())
		return
	}
	require.True(r.t, align.Is(uint64(addr), align.CUDA), "%s: Ptr %#x unaligned", fb.b.Name(), addr)
	if !r.devBaseKnown[fb.arena] {
		r.devBase[fb.arena], r.devBaseKnown[fb.arena] = base, true
	}
	require.Equal(r.t, r.devBase[fb.arena], base, "%s: Ptr is not at the arena's base plus Offset", fb.b.Name())
}

// wrote records that fb now holds pattern: any other buffer of the same
// generation whose bytes overlap fb's (legitimately, since checkLayout
// proves they are never alive together) no longer holds its own.
func (r *fuzzRun) wrote(fb *fuzzBuf, pattern byte) {
	off := fb.b.Offset()
	for _, o := range r.bufs {
		if o == fb || !o.written || o.gen != r.gen || o.arena != fb.arena {
			continue
		}
		if oo := o.b.Offset(); oo < off+fb.size && off < oo+o.size {
			o.written = false
		}
	}
	fb.written, fb.pattern = true, pattern
	r.verifyOne(fb)
}

// verify reads back every buffer written in this generation: a write that
// reached another buffer's bytes shows here.
func (r *fuzzRun) verify() {
	for _, fb := range r.bufs {
		if fb.written && fb.gen == r.gen {
			r.verifyOne(fb)
		}
	}
}

func (r *fuzzRun) verifyOne(fb *fuzzBuf) {
	t := r.t
	got := pooltest.Read(t, r.f, fb.b)
	if i := slices.IndexFunc(got, func(c byte) bool { return c != fb.pattern }); i >= 0 {
		t.Fatalf("%s (%s arena, offset %d, %d bytes): byte %d is %#x, want %#x: overwritten through another handle",
			fb.b.Name(), fb.arena, fb.b.Offset(), fb.size, i, got[i], fb.pattern)
	}
}

func arenaStats(st pool.Stats, k pool.Arena) pool.ArenaStats {
	switch k {
	case pool.Host:
		return st.Host
	case pool.Managed:
		return st.Managed
	}
	return st.Device
}

type fuzzPlacement struct {
	arena        pool.Arena
	offset, size uint64
}

// check is the invariant check run after every operation.
func (r *fuzzRun) check() {
	t := r.t
	st := r.p.Stats()
	require.Equal(t, r.closed, st.Closed)
	if r.closed {
		if !r.closeFailed {
			require.True(t, r.f.Live().Empty(), "Close returned nil, yet the fake still holds: %v", r.f.CheckLeaks())
		}
		for _, fb := range r.bufs {
			_, err := fb.b.Ptr()
			require.ErrorIs(t, err, pool.ErrClosed, "%s after Close", fb.b.Name())
		}
		return
	}
	checkLayout(t, r.p)
	require.Equal(t, r.committed, st.Committed)

	// The model and the pool agree on every handle.
	var placed, queued [3]int
	var requested [3]uint64
	var mine []fuzzPlacement
	for _, fb := range r.bufs {
		_, err := fb.b.Ptr()
		switch {
		case fb.gen != r.gen:
			require.ErrorIs(t, err, pool.ErrReleased, "%s is from before ReleaseAll", fb.b.Name())
			continue
		case !fb.placed:
			require.ErrorIs(t, err, pool.ErrNotPlaced, "%s is queued", fb.b.Name())
			queued[fb.arena]++
			continue
		}
		placed[fb.arena]++
		requested[fb.arena] += fb.size
		mine = append(mine, fuzzPlacement{fb.arena, fb.b.Offset(), fb.size})
	}
	var theirs []fuzzPlacement
	for _, pl := range r.p.Layout() {
		theirs = append(theirs, fuzzPlacement{pl.Arena, pl.Offset, pl.Size})
	}
	cmp := func(a, b fuzzPlacement) int {
		if a.arena != b.arena {
			return int(a.arena) - int(b.arena)
		}
		if a.offset != b.offset {
			if a.offset < b.offset {
				return -1
			}
			return 1
		}
		return int(a.size) - int(b.size)
	}
	slices.SortFunc(mine, cmp)
	slices.SortFunc(theirs, cmp)
	require.Equal(t, mine, theirs, "Layout lists exactly the placed handles, at their offsets")

	for _, k := range []pool.Arena{pool.Device, pool.Host, pool.Managed} {
		a := arenaStats(st, k)
		require.Equal(t, r.caps[k] != 0, a.Reserved, "%s reserved", k)
		require.Equal(t, r.caps[k], a.Capacity, "%s capacity", k)
		require.Equal(t, placed[k], a.Placed, "%s placed", k)
		require.Equal(t, queued[k], a.Queued, "%s queued", k)
		require.Equal(t, requested[k], a.Requested, "%s requested", k)
		require.Equal(t, a.Unshared-a.Requested, a.Padding, "%s padding", k)
		require.LessOrEqual(t, a.Used, a.Mapped, "%s: the plan must be backed by mapped memory", k)
		if k == pool.Device && r.growable {
			require.LessOrEqual(t, a.Mapped, a.Capacity, "%s mapped", k)
		} else {
			require.Equal(t, a.Capacity, a.Mapped, "%s: a fixed arena is mapped whole", k)
		}
		require.GreaterOrEqual(t, a.Peak, a.Used, "%s peak", k)
	}
	for _, pl := range theirs {
		require.LessOrEqual(t, pl.offset+pl.size, arenaStats(st, pl.arena).Mapped,
			"%s buffer at %d (%d bytes) is placed in memory that is not mapped", pl.arena, pl.offset, pl.size)
	}
	r.checkHeld(st)
}

// checkHeld compares what the fake holds with what the pool says it holds.
func (r *fuzzRun) checkHeld(st pool.Stats) {
	requireHeld(r.t, r.f, st, heldShape{growable: r.growable, gran: r.gran, hostMapped: r.hostMapped, deferred: r.faultFired})
}

// heldShape is what requireHeld must know of a pool that Stats does not say.
type heldShape struct {
	growable   bool   // the device arena is growable
	gran       uint64 // the fake's allocation granularity, for a growable arena
	hostMapped bool   // the host arena was pinned with pinned.Mapped
	deferred   bool   // a fault fired: physical memory whose release failed may still be held
}

// requireHeld fails t unless the fake holds exactly the arenas st describes:
// one cudaMalloc of the fixed device arena's capacity, or for a growable one
// a reservation and exactly Mapped bytes of physical memory, all mapped; the
// host arena allocated or registered as HostPinning says; the managed arena;
// and nothing else.
func requireHeld(t testing.TB, f *cudarttest.Fake, st pool.Stats, shape heldShape) {
	t.Helper()
	live := f.Live()
	var want cudarttest.Usage
	if st.Device.Reserved {
		if shape.growable {
			reserved, err := align.Up(st.Device.Capacity, shape.gran)
			require.NoError(t, err)
			want.Reservations, want.ReservedBytes = 1, reserved
			want.Mappings, want.MappedBytes = live.Mappings, st.Device.Mapped
			want.PhysAllocs, want.PhysBytes = live.Mappings, st.Device.Mapped
			if shape.deferred && live.PhysBytes >= st.Device.Mapped {
				// A release that failed is retried at the next growth
				// and at Close: until then the fake holds more.
				want.PhysAllocs, want.PhysBytes = live.PhysAllocs, live.PhysBytes
			}
		} else {
			want.DeviceAllocs, want.DeviceBytes = 1, st.Device.Capacity
		}
	}
	if st.Host.Reserved {
		if st.HostPinning == pinned.MethodHostAlloc {
			want.HostAllocs, want.HostBytes = 1, st.Host.Capacity
			if shape.hostMapped {
				want.MappedHostAllocs, want.MappedHostBytes = 1, st.Host.Capacity
			}
		} else {
			want.RegisteredAllocs, want.RegisteredBytes = 1, st.Host.Capacity
		}
	}
	if st.Managed.Reserved {
		want.ManagedAllocs, want.ManagedBytes = 1, st.Managed.Capacity
	}
	for i, a := range []pool.ArenaStats{st.Device, st.Host, st.Managed} {
		if a.Reserved && a.Mapped > 0 && !st.Closed && f.AnnotationsEnabled(0) && (i != 0 || !shape.growable) {
			want.MemHeaps++ // each arena's mapped bytes are annotated until Close
		}
	}
	require.Equal(t, want, live, "the fake must hold exactly what the pool says it holds (%+v)", st)
}

// finish closes the pool with no fault armed, retrying a Close that failed:
// the fake must then hold nothing.
func (r *fuzzRun) finish() {
	r.f.ClearFaults()
	if !r.closed {
		r.verify()
	}
	require.NoError(r.t, r.p.Close())
	require.NoError(r.t, r.f.CheckLeaks())
}
