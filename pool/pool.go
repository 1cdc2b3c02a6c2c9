package pool

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/devreset"
	"github.com/cudapool/cudapool/pinned"
)

// Pool is a pre-reserved device arena and pinned host arena, and the buffers
// placed in them. It is safe for concurrent use. Create one with New; the
// zero Pool refuses every call.
type Pool struct {
	rt    cudart.Runtime
	dev   int
	peers []int // devices given access to the arena, waited for by Close
	log   *zap.Logger
	debug bool // the logger is enabled at Debug: log each request

	heapBytes   uint64         // the device malloc heap CUDA granted, when WithMallocHeap was given
	hostPinning pinned.Method  // how the host arena was pinned, after any fallback
	reset       devreset.Watch // sees a reset of the device, which frees the arenas

	// mu guards every field below and the placement fields of every Buffer
	// the pool handed out. It is never held while caller code (an option, a
	// logger) runs, and every holder but the request fast path unlocks it
	// in a defer, so a panic leaves it free.
	mu        sync.Mutex
	arenas    [numArenas]*ledger // indexed by Arena; nil when that arena was not taken
	gen       uint64             // incremented by ReleaseAll: older handles are stale
	live      atomic.Uint64      // gen while the pool is open, releasingGen during ReleaseAll, closedGen from Close on: Buffer.Placed reads it without mu
	users     atomic.Int64       // the holds of Buffer.Use not yet Done, which ReleaseAll and Close wait out
	committed bool
	closed    bool
	slab      []Buffer // handles are taken from here, slabNext onwards, to allocate them in bulk
	slabNext  int
	streams   []cudart.Stream    // the streams ReleaseAll and Close wait for; none: the whole device
	events    []cudart.Event     // one per stream, recorded to wait for it
	annot     cudart.Annotations // the runtime's annotations when a tool listens, else nil
	queued    bool               // device work of the pool's own (guard and poison fills) not yet waited for
	resetSaid bool               // Close has returned ErrDeviceReset
	freed     bool               // Close has given everything back
	step      int32              // the step Step last set...
	stepSet   bool               // ...once Step was called since New or ReleaseAll
}

// New reserves the arenas, once: the device arena with cudaMalloc (or CUDA
// virtual memory, WithGrowableDevice), the host arena as pinned memory
// (huge pages registered with cudaHostRegister by default; see
// WithHostPinning) and, when asked, a managed arena. If it fails half way, it
// frees what it took and puts back the device settings it changed (the
// malloc heap size of WithMallocHeap, and cudaDeviceMapHost when the host
// arena was to be mapped) before it returns; an error restoring one is joined
// to the error returned.
func New(rt cudart.Runtime, opts ...Option) (*Pool, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: nil runtime; pass cudart.Open's Library or a cudarttest fake", ErrInvalidOption)
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if err := checkDevices(rt, &cfg); err != nil {
		return nil, err
	}
	p := &Pool{rt: rt, dev: cfg.device, peers: cfg.peers, log: cfg.logger, debug: cfg.logger.Core().Enabled(zap.DebugLevel),
		reset: devreset.Start(rt, cfg.device)}
	var undo undoList
	done := false
	defer func() {
		// A panic in a logger or runtime half way through New takes back
		// what New took before it goes on up.
		if !done {
			_ = undo.run()
		}
	}()
	if err := p.reserve(&cfg, &undo); err != nil {
		done = true
		return nil, errors.Join(err, undo.run())
	}
	devBytes := p.Stats().Device.Capacity
	p.log.Info("pool: arenas reserved",
		zap.Int("device", p.dev),
		zap.Uint64("device_bytes", devBytes),
		zap.Uint64("host_bytes", cfg.hostBytes),
		zap.String("device_size", bytesize.Format(devBytes)),
		zap.String("host_size", bytesize.Format(cfg.hostBytes)))
	done = true
	return p, nil
}

// checkDevices refuses a device or peer the runtime does not have.
func checkDevices(rt cudart.Runtime, cfg *config) error {
	n, err := rt.DeviceCount()
	if err != nil {
		return fmt.Errorf("pool: count devices: %w", err)
	}
	if cfg.device >= n {
		return fmt.Errorf("%w: device %d requested, the runtime has %d device(s)", ErrInvalidOption, cfg.device, n)
	}
	for _, d := range cfg.peers {
		if d < 0 || d >= n || d == cfg.device {
			return fmt.Errorf("%w: peer device %d for WithPeerAccess: want another of the runtime's %d device(s) than device %d", ErrInvalidOption, d, n, cfg.device)
		}
	}
	if len(cfg.peers) > 0 && cfg.growableMax == 0 {
		return fmt.Errorf("%w: WithPeerAccess needs WithGrowableDevice: access to a cudaMalloc arena is granted with cudaDeviceEnablePeerAccess by the caller", ErrInvalidOption)
	}
	return nil
}

// reserve takes every arena cfg asks for and applies the device settings,
// pushing onto undo what puts each back.
func (p *Pool) reserve(cfg *config, undo *undoList) error {
	undo.push(p.dropEvents)
	if err := p.addStreams(cfg.streams, true); err != nil {
		return err
	}
	take := func(kind Arena, a arena, err error) error {
		if err != nil {
			return err
		}
		undo.push(a.close)
		p.arenas[kind] = newLedger(kind, a, cfg.guard)
		return nil
	}
	switch {
	case cfg.growableMax > 0:
		a, err := reserveGrowableDevice(p.rt, p.dev, cfg.growableMax, cfg.peers, cfg.trimOnRelease)
		if err := take(Device, a, err); err != nil {
			return err
		}
	case cfg.deviceBytes > 0:
		a, err := reserveFixedDevice(p.rt, p.dev, cfg.deviceBytes)
		if err := take(Device, a, err); err != nil {
			return err
		}
	}
	if cfg.hostBytes > 0 {
		if cfg.hostFlags&pinned.Mapped != 0 {
			undo.push(keepDeviceFlags(p.rt, p.dev))
		}
		a, err := reservePinnedHost(p.rt, p.dev, cfg.hostBytes, cfg)
		if err := take(Host, a, err); err != nil {
			return err
		}
		p.hostPinning = a.r.Method()
	}
	if cfg.managedBytes > 0 {
		a, err := reserveManaged(p.rt, p.dev, cfg.managedBytes)
		if err := take(Managed, a, err); err != nil {
			return err
		}
	}
	if cfg.heapBytes > 0 {
		granted, err := setMallocHeap(p.rt, p.dev, cfg.heapBytes, undo)
		if err != nil {
			return err
		}
		p.heapBytes = granted
	}
	p.annot = annotationsOf(p.rt, p.dev)
	return p.registerHeaps(undo)
}

// closedGen is Pool.live once the pool is closed, releasingGen while
// ReleaseAll runs: no handle has either, since a generation counts
// ReleaseAlls.
const (
	closedGen    = ^uint64(0)
	releasingGen = closedGen - 1
)

// stopUsers makes Buffer.Placed and Use see live (releasingGen or
// closedGen) and waits for the holds of Use before it, whose holders call
// nothing of the pool and queue their work before Done. The caller holds
// p.mu.
func (p *Pool) stopUsers(live uint64) {
	p.live.Store(live)
	for p.users.Load() != 0 {
		runtime.Gosched()
	}
}

// alive refuses a call on a closed pool, or on one whose device was reset.
// The caller holds p.mu.
func (p *Pool) alive() error {
	switch {
	case p.closed:
		return ErrClosed
	case p.reset.Reset():
		return fmt.Errorf("%w: device %d was reset since New, which invalidated the arenas; Close the pool", ErrDeviceReset, p.dev)
	}
	return nil
}

// locked runs fn with p.mu held, on a pool New made that is alive.
func (p *Pool) locked(fn func() error) error {
	if err := p.valid(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.alive(); err != nil {
		return err
	}
	return fn()
}

// valid refuses a nil or zero Pool, which New did not make.
func (p *Pool) valid() error {
	if p == nil || p.rt == nil {
		return fmt.Errorf("%w: the pool was not created by New", ErrClosed)
	}
	return nil
}

// Close waits for the holds of Buffer.Use not yet Done, then for the work
// that may use the arenas to finish, since kernels
// and copies still in flight may use them: the work queued on the streams of
// WithStreams and UseStreams, or, without them, all the work of the pool's
// device and of the devices given WithPeerAccess. Then it frees the arenas. Every handle becomes unusable.
// If waiting for a stream fails, Close waits for the whole device instead;
// if waiting fails there too, the device has ended that work with an error,
// so Close frees the arenas all the same and returns the error. Close is
// idempotent: what it could not free (an arena, a stream's event) it keeps,
// returning the error, and a later Close tries again.
// After a reset of the device, Close forgets what the reset freed, frees
// what it left (a growable arena), waits for nothing, and returns an error
// matching ErrDeviceReset, once; see the package's Caveats.
func (p *Pool) Close() error {
	if err := p.valid(); err != nil {
		return err
	}
	err := p.close()
	p.log.Info("pool: closed", zap.Int("device", p.dev), zap.Error(err))
	return err
}

func (p *Pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.freed:
		return nil
	case p.reset.Reset():
		return p.closeAfterReset()
	}
	p.stopUsers(closedGen)
	defer func() {
		if !p.closed { // a runtime call panicked before the close
			p.live.Store(p.gen)
		}
	}()
	var errs []error
	if !p.closed {
		werr := p.wait(true)
		if werr != nil {
			errs = append(errs, fmt.Errorf("pool: before freeing the arenas: %w", werr))
			if len(p.streams) > 0 {
				// A stream's wait that failed without a fault (a call
				// refused, a stream destroyed under the pool) leaves its
				// work queued, to run on memory freed under it: the whole
				// device is waited for instead. If the device faulted, this
				// fails too, and the work has ended.
				_ = p.waitDevices(true)
			}
		}
		// Waited for on its own: a wait on the caller's streams that failed
		// does not end the pool's fills, which must not run on memory
		// unmapped under them. A sticky fault has already ended them, and
		// says so once.
		if err := p.settle(); err != nil && werr == nil {
			errs = append(errs, fmt.Errorf("pool: before freeing the arenas: %w", err))
		}
	}
	p.closed = true
	errs = append(errs, p.dropEvents(), p.unregisterHeaps())
	for _, l := range p.arenas {
		if l != nil {
			if err := l.mem.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	err := errors.Join(errs...)
	p.freed = err == nil
	return err
}

// closeAfterReset is close once the device was reset: CUDA freed the fixed
// and managed arenas, the pinning and the events with it, and the handles
// are invalid, so the pool forgets them; the growable arena, virtual memory
// that the reset leaves, it still frees. The caller holds p.mu.
func (p *Pool) closeAfterReset() error {
	p.stopUsers(closedGen)
	p.closed = true
	p.streams, p.events, p.queued = nil, nil, false
	errs := []error{p.unregisterHeaps()}
	for _, l := range p.arenas {
		if l != nil {
			errs = append(errs, l.mem.forget())
		}
	}
	err := errors.Join(errs...)
	p.freed = err == nil
	if !p.resetSaid {
		p.resetSaid = true
		err = errors.Join(fmt.Errorf("%w: device %d was reset since New: the pool forgot what the reset freed, freed what it left, and is closed", ErrDeviceReset, p.dev), err)
	}
	return err
}

// Device is the ordinal of the GPU the pool's arenas are on.
func (p *Pool) Device() int {
	if p == nil {
		return 0
	}
	return p.dev
}
