package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// stressGoroutines is the figure: enough to keep the pool's mutex
// contended on any machine.
const stressGoroutines = 64

// stressOwned is one buffer a goroutine of TestConcurrentTrafficThroughEveryArena
// placed and filled, and the bytes it must still hold at the end.
type stressOwned struct {
	b       *pool.Buffer
	pattern []byte
}

// TestConcurrentTrafficThroughEveryArena extends TestConcurrentUse (host
// writes on a fixed arena) to what a pipeline does: 64 goroutines request
// host, device and lifetime buffers at once, satisfy, copy a pattern host to
// device through the fake and straight back, and read the handles other
// goroutines published, on a fixed and on a growable arena with the default
// (registering) host pinning. At the end every buffer must still hold its
// pattern, and the same invariant check as the fuzz target must hold:
// layout, statistics and the fake's accounting.
func TestConcurrentTrafficThroughEveryArena(t *testing.T) {
	tests := []struct {
		name     string
		opts     []pool.Option
		growable bool
	}{
		{"fixed", []pool.Option{pool.WithDeviceBytes(64 * mib), pool.WithHostBytes(16 * mib), pool.WithHostPinning(pinned.MethodHostAlloc)}, false},
		{"growable", []pool.Option{pool.WithGrowableDevice(256 * mib), pool.WithHostBytes(4 * mib)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rounds = 6
			p, f := newPool(t, tt.opts...)
			dev := p.Device()

			// published holds device handles any goroutine may read: the
			// pool must answer for them while others place more.
			var pubMu sync.Mutex
			var published []*pool.Buffer
			var base atomic.Uintptr // the device arena's base as seen through Ptr - Offset

			owned := make([][]stressOwned, stressGoroutines)
			errs := make(chan error, stressGoroutines)
			var wg sync.WaitGroup
			for g := 0; g < stressGoroutines; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					if err := stressWorker(p, f, dev, g, rounds, &owned[g], &pubMu, &published, &base); err != nil {
						errs <- fmt.Errorf("goroutine %d: %w", g, err)
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			require.False(t, t.Failed())

			// Nothing a goroutine wrote was overwritten by another.
			for g, bufs := range owned {
				for _, o := range bufs {
					got, err := stressRead(f, dev, o.b)
					require.NoError(t, err)
					require.True(t, bytes.Equal(o.pattern, got), "goroutine %d: %s (%s, offset %d) was overwritten", g, o.b.Name(), o.b.Arena(), o.b.Offset())
				}
			}
			checkLayout(t, p)
			st := p.Stats()
			assert.Equal(t, stressGoroutines*rounds*2, st.Device.Placed)
			assert.Equal(t, stressGoroutines*rounds, st.Host.Placed)
			assert.Zero(t, st.Device.Queued+st.Host.Queued)
			assert.LessOrEqual(t, st.Device.Used, st.Device.Mapped)
			for _, pl := range p.Layout() {
				require.LessOrEqual(t, pl.Offset+pl.Size, arenaStats(st, pl.Arena).Mapped, "%+v not backed", pl)
			}
			requireHeld(t, f, st, heldShape{growable: tt.growable, gran: 2 * mib})
		})
	}
}

// stressWorker is one goroutine of TestConcurrentTrafficThroughEveryArena.
func stressWorker(p *pool.Pool, f *cudarttest.Fake, dev, g, rounds int, owned *[]stressOwned,
	pubMu *sync.Mutex, published *[]*pool.Buffer, base *atomic.Uintptr) error {
	for i := 0; i < rounds; i++ {
		name := fmt.Sprintf("g%d.%d", g, i)
		h, err := p.WantHost(uint64(64+g*13+i*7), pool.Name(name+".host"))
		if err != nil {
			return err
		}
		d, err := p.WantDevice(uint64(1000+g*101+i*37), pool.Name(name+".dev"))
		if err != nil {
			return err
		}
		// Lifetime buffers go through the planner, around everything the
		// other goroutines placed; they are never written, since buffers of
		// other goroutines with disjoint lifetimes may share their bytes.
		first := (g + i) % 16
		if _, err := p.WantDevice(uint64(4096+g), pool.Name(name+".act"), pool.Live(first, first+2)); err != nil {
			return err
		}
		if err := p.Satisfy(); err != nil {
			return err
		}

		hb, err := h.Bytes()
		if err != nil {
			return err
		}
		hp := stressPattern(g, i, len(hb))
		copy(hb, hp)
		*owned = append(*owned, stressOwned{h, hp})

		// Host to device from pinned memory, device to host straight back.
		ptr, err := d.Ptr()
		if err != nil {
			return err
		}
		if b := uintptr(ptr) - uintptr(d.Offset()); !base.CompareAndSwap(0, b) && base.Load() != b {
			return fmt.Errorf("%s: Ptr - Offset is %#x, other buffers' %#x", d.Name(), b, base.Load())
		}
		// The device pattern starts with the host buffer's bytes, copied
		// from the pinned buffer itself; the rest comes from Go memory.
		dp := stressPattern(g, i+rounds, int(d.Size()))
		copy(dp, hp)
		n := uint64(len(hp))
		if err := f.Memcpy(dev, cudart.DeviceMem(ptr, n), cudart.HostMem(hb), cudart.HostToDevice); err != nil {
			return err
		}
		if err := f.Memcpy(dev, cudart.DeviceMem(ptr.Add(n), d.Size()-n), cudart.HostMem(dp[n:]), cudart.HostToDevice); err != nil {
			return err
		}
		back, err := stressRead(f, dev, d)
		if err != nil {
			return err
		}
		if !bytes.Equal(dp, back) {
			return fmt.Errorf("%s reads back other bytes than were copied in", d.Name())
		}
		*owned = append(*owned, stressOwned{d, dp})

		// Read a handle another goroutine published.
		pubMu.Lock()
		*published = append(*published, d)
		other := (*published)[(g*31+i)%len(*published)]
		pubMu.Unlock()
		if _, err := other.Ptr(); err != nil {
			return fmt.Errorf("another goroutine's %s: %w", other.Name(), err)
		}
		if other.Size() == 0 || other.Arena() != pool.Device {
			return fmt.Errorf("another goroutine's %s: size %d in the %s arena", other.Name(), other.Size(), other.Arena())
		}
		_ = p.Stats()
	}
	return nil
}

// stressPattern is bytes no other (g, i) pair writes at the same position.
func stressPattern(g, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(g*7 + i*131 + j)
	}
	return b
}

// stressRead is a buffer's bytes: its view for a host buffer, a copy to the
// host through the fake for a device one.
func stressRead(f *cudarttest.Fake, dev int, b *pool.Buffer) ([]byte, error) {
	if b.Arena() == pool.Host {
		hb, err := b.Bytes()
		return bytes.Clone(hb), err
	}
	ptr, err := b.Ptr()
	if err != nil {
		return nil, err
	}
	got := make([]byte, b.Size())
	return got, f.Memcpy(dev, cudart.HostMem(got), cudart.DeviceMem(ptr, b.Size()), cudart.DeviceToHost)
}

// TestCommitReleaseCloseRaceOnGrowableArena extends
// TestReleaseAndCloseRacingWithRequests (fixed arena, WantDevice and
// Satisfy) to the growable arena, with and without trimming, and to every
// call that changes the pool's state: requests for both arenas, some with
// lifetimes, Satisfy and Commit, racing with a goroutine that commits,
// releases and finally closes, while the test goroutine checks the layout
// throughout. Every call must return nil or an error that names the race
// (never a panic, never a placement outside the arena or overlapping), and
// once Close returns, the fake holds nothing and every handle is closed.
func TestCommitReleaseCloseRaceOnGrowableArena(t *testing.T) {
	for _, trim := range []bool{false, true} {
		t.Run(fmt.Sprintf("trim=%t", trim), func(t *testing.T) {
			f := cudarttest.NewFakeT(t, cudarttest.WithGranularity(64<<10))
			opts := []pool.Option{pool.WithGrowableDevice(8 * mib), pool.WithHostBytes(256 << 10)}
			if trim {
				opts = append(opts, pool.WithTrimOnRelease())
			}
			p, err := pool.New(f, opts...)
			require.NoError(t, err)

			const workers = 32
			var ops atomic.Int64 // requests the workers made: the race must overlap them
			var wg sync.WaitGroup
			handles := make([][]*pool.Buffer, workers)
			errs := make(chan error, workers+1)
			for g := 0; g < workers; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					if err := raceWorker(p, g, &handles[g], &ops); err != nil {
						errs <- fmt.Errorf("worker %d: %w", g, err)
					}
				}(g)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 60 || ops.Load() < 5000; i++ {
					if err := p.Commit(); err != nil && !errors.Is(err, pool.ErrExhausted) {
						errs <- fmt.Errorf("Commit: %w", err)
					}
					if err := p.ReleaseAll(); err != nil {
						errs <- fmt.Errorf("ReleaseAll: %w", err)
					}
				}
				if err := p.Close(); err != nil {
					errs <- fmt.Errorf("Close: %w", err)
				}
			}()
			// The layout is consistent at every instant the lock is free.
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
					checkLayout(t, p)
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			require.True(t, p.Stats().Closed)
			require.True(t, f.Live().Empty(), "%v", f.CheckLeaks())
			for _, hs := range handles {
				for _, h := range hs {
					_, err := h.Ptr()
					require.ErrorIs(t, err, pool.ErrClosed)
				}
			}
			require.NoError(t, p.Close(), "Close after Close")
			t.Logf("%d requests raced with the releases", ops.Load())
		})
	}
}

// raceWorker requests, places and reads handles until the pool is closed,
// and refuses any error a race cannot explain.
func raceWorker(p *pool.Pool, g int, handles *[]*pool.Buffer, ops *atomic.Int64) error {
	allowed := func(err error, sentinels ...error) error {
		if err == nil {
			return nil
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return nil
			}
		}
		return err
	}
	for i := 0; ; i++ {
		ops.Add(1)
		opts := []pool.WantOption{pool.Name(fmt.Sprintf("w%d.%d", g, i))}
		if i%3 == 0 {
			opts = append(opts, pool.Live(i%8, i%8+1))
		}
		var b *pool.Buffer
		var err error
		if i%4 == 0 {
			b, err = p.WantHost(uint64(100+i%500), opts...)
		} else {
			b, err = p.WantDevice(uint64(1000+(g*977+i*131)%(200<<10)), opts...)
		}
		if errors.Is(err, pool.ErrClosed) {
			return nil
		}
		if err := allowed(err, pool.ErrCommitted, pool.ErrExhausted); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if b != nil {
			*handles = append(*handles, b)
		}
		place := p.Satisfy
		if i%5 == 0 {
			place = p.Commit
		}
		if err := allowed(place(), pool.ErrClosed, pool.ErrExhausted); err != nil {
			return fmt.Errorf("Satisfy/Commit: %w", err)
		}
		if b == nil {
			continue
		}
		if b.Arena() == pool.Host {
			_, err = b.Bytes()
		} else {
			_, err = b.Ptr()
		}
		if err := allowed(err, pool.ErrReleased, pool.ErrClosed, pool.ErrNotPlaced); err != nil {
			return fmt.Errorf("%s: %w", b.Name(), err)
		}
	}
}
