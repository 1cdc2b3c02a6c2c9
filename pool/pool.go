package pool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
)

// Pool is a pre-reserved device arena and pinned host arena, and the buffers
// placed in them. It is safe for concurrent use.
type Pool struct {
	rt     cudart.Runtime
	device int
	log    *zap.Logger
	debug  bool // the logger is enabled at Debug: log each request

	trimOnRelease bool
	heapBytes     uint64 // the device malloc heap CUDA granted, when WithMallocHeap was given

	// mu guards every field below and the placement fields of every Buffer
	// the pool handed out.
	mu        sync.Mutex
	arenas    [numArenas]*arena // indexed by Arena; nil when that arena was not taken
	gen       uint64            // incremented by ReleaseAll: older handles are stale
	committed bool
	closed    bool
	slab      []Buffer // handles are taken from here, slabNext onwards, to allocate them in bulk
	slabNext  int
}

// New reserves the arenas: the device arena with cudaMalloc and the host arena
// with cudaMallocHost, once. If it fails half way, what it already took is
// freed before it returns.
func New(rt cudart.Runtime, opts ...Option) (*Pool, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: nil runtime; pass cudart.Open's *Lib or a cudarttest fake", ErrInvalidOption)
	}
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.device < 0 {
		return nil, fmt.Errorf("%w: device ordinal %d is negative", ErrInvalidOption, cfg.device)
	}
	n, err := rt.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("pool: count devices: %w", err)
	}
	if cfg.device >= n {
		return nil, fmt.Errorf("%w: device %d requested, the runtime has %d device(s)", ErrInvalidOption, cfg.device, n)
	}
	for _, d := range cfg.peers {
		if d < 0 || d >= n || d == cfg.device {
			return nil, fmt.Errorf("%w: peer device %d for WithPeerAccess: want another of the runtime's %d device(s) than device %d", ErrInvalidOption, d, n, cfg.device)
		}
	}
	p := &Pool{rt: rt, device: cfg.device, log: cfg.logger, debug: cfg.logger.Core().Enabled(zap.DebugLevel), trimOnRelease: cfg.trimOnRelease}
	switch {
	case cfg.growableMax > 0:
		a, err := p.newGrowableArena(cfg.growableMax, cfg.peers)
		if err != nil {
			return nil, err
		}
		p.arenas[Device] = a
		cfg.deviceBytes = cfg.growableMax
	case len(cfg.peers) > 0:
		return nil, fmt.Errorf("%w: WithPeerAccess needs WithGrowableDevice: access to a cudaMalloc arena is granted with cudaDeviceEnablePeerAccess by the caller", ErrInvalidOption)
	case cfg.deviceBytes > 0:
		a, err := p.newDeviceArena(cfg.deviceBytes)
		if err != nil {
			return nil, err
		}
		p.arenas[Device] = a
	}
	if cfg.hostBytes > 0 {
		a, err := p.newHostArena(cfg.hostBytes, cfg)
		if err != nil {
			return nil, errors.Join(err, p.freeArenas())
		}
		p.arenas[Host] = a
	}
	if cfg.managedBytes > 0 {
		a, err := p.newManagedArena(cfg.managedBytes)
		if err != nil {
			return nil, errors.Join(err, p.freeArenas())
		}
		p.arenas[Managed] = a
	}
	if cfg.heapBytes > 0 {
		granted, err := p.setMallocHeap(cfg.heapBytes)
		if err != nil {
			return nil, errors.Join(err, p.freeArenas())
		}
		p.heapBytes = granted
	}
	p.log.Info("cudapool: arenas reserved",
		zap.Int("device", p.device),
		zap.Uint64("device_bytes", cfg.deviceBytes),
		zap.Uint64("host_bytes", cfg.hostBytes),
		zap.String("device_size", humanize.IBytes(cfg.deviceBytes)),
		zap.String("host_size", humanize.IBytes(cfg.hostBytes)))
	return p, nil
}

func (p *Pool) newDeviceArena(n uint64) (*arena, error) {
	ptr, err := p.rt.Malloc(p.device, n)
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s device arena on device %d: %w", humanize.IBytes(n), p.device, err)
	}
	return &arena{
		kind:     Device,
		capacity: n,
		devBase:  ptr,
		release:  func() error { return p.rt.Free(p.device, ptr) },
	}, nil
}

// Close frees the arenas. Every handle becomes unusable. Close is idempotent:
// if freeing failed, the error is returned and a later Close tries again.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	err := p.freeArenas()
	p.log.Info("cudapool: closed", zap.Int("device", p.device), zap.Error(err))
	return err
}

// freeArenas frees what has not been freed yet and keeps what failed, so that
// a retry can free it.
func (p *Pool) freeArenas() error {
	var errs []error
	for _, a := range p.arenas {
		if a == nil || a.release == nil {
			continue
		}
		if err := a.release(); err != nil {
			errs = append(errs, fmt.Errorf("pool: free %s %s arena: %w", humanize.IBytes(a.capacity), a.kind, err))
			continue
		}
		a.release = nil
	}
	return errors.Join(errs...)
}

// Device is the ordinal of the GPU the pool's arenas are on.
func (p *Pool) Device() int { return p.device }
