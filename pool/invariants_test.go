package pool_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/pool"
)

// checkLayout fails the test when two buffers that are alive together
// overlap, when an offset is unaligned, or when a buffer leaves its arena.
func checkLayout(t *testing.T, p *pool.Pool) {
	t.Helper()
	st := p.Stats()
	caps := map[pool.Arena]uint64{pool.Device: st.Device.Capacity, pool.Host: st.Host.Capacity, pool.Managed: st.Managed.Capacity}
	l := p.Layout()
	for i, a := range l {
		require.True(t, align.Is(a.Offset, align.CUDA), "%+v unaligned", a)
		require.LessOrEqual(t, a.Offset+a.Size, caps[a.Arena], "%+v outside its arena", a)
		for _, b := range l[i+1:] {
			if a.Arena != b.Arena || b.Offset >= a.Offset+a.Size {
				break // sorted by offset: nothing later overlaps a
			}
			if alive(a).overlaps(alive(b)) {
				t.Fatalf("%+v and %+v overlap while both alive", a, b)
			}
		}
	}
}

type steps struct{ first, last int }

func alive(p pool.Placement) steps {
	if p.Whole {
		return steps{0, pool.MaxStep + 1}
	}
	return steps{p.First, p.Last}
}

func (s steps) overlaps(o steps) bool { return s.first <= o.last && o.first <= s.last }

// TestPlacementProperties runs random sequences of requests, Satisfy and
// ReleaseAll and checks the layout after every step.
func TestPlacementProperties(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			p, _ := newPool(t, pool.WithDeviceBytes(64*mib), pool.WithHostBytes(16*mib))
			for op := 0; op < 200; op++ {
				switch k := r.IntN(10); {
				case k < 6:
					size := 1 + r.Uint64N(1<<uint(1+r.IntN(20)))
					var opts []pool.WantOption
					if r.IntN(2) == 0 {
						first := r.IntN(50)
						opts = append(opts, pool.Live(first, first+r.IntN(20)))
					}
					var err error
					if r.IntN(3) == 0 {
						_, err = p.WantHost(size, opts...)
					} else {
						_, err = p.WantDevice(size, opts...)
					}
					if err != nil {
						require.ErrorIs(t, err, pool.ErrExhausted)
					}
				case k < 9:
					if err := p.Satisfy(); err != nil {
						require.ErrorIs(t, err, pool.ErrExhausted)
						require.NoError(t, p.ReleaseAll())
					}
				default:
					require.NoError(t, p.ReleaseAll())
				}
				checkLayout(t, p)
			}
		})
	}
}

// TestConcurrentUse has 64 goroutines requesting, satisfying and writing
// through their handles at once; every host buffer must read back what its
// owner wrote, so any overlap shows up as corruption.
func TestConcurrentUse(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(256*mib), pool.WithHostBytes(64*mib))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var mine []*pool.Buffer
			for i := 0; i < 20; i++ {
				h, err := p.WantHost(uint64(100+g*7+i), pool.Name(fmt.Sprintf("g%d-%d", g, i)))
				if err != nil {
					errs <- err
					return
				}
				if _, err := p.WantDevice(uint64(1000 + i)); err != nil {
					errs <- err
					return
				}
				if err := p.Satisfy(); err != nil {
					errs <- err
					return
				}
				b, err := h.Bytes()
				if err != nil {
					errs <- err
					return
				}
				for j := range b {
					b[j] = byte(g)
				}
				mine = append(mine, h)
			}
			for _, h := range mine {
				b, err := h.Bytes()
				if err != nil {
					errs <- err
					return
				}
				for j := range b {
					if b[j] != byte(g) {
						errs <- fmt.Errorf("%s byte %d = %d, overwritten by goroutine %d", h.Name(), j, b[j], b[j])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkLayout(t, p)
	assert.Equal(t, 64*20, p.Stats().Host.Placed)
}

// TestReleaseAndCloseRacingWithRequests must give errors, never a panic or a
// placement in freed memory.
func TestReleaseAndCloseRacingWithRequests(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(64*mib), pool.WithHostBytes(mib))
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				b, err := p.WantDevice(512)
				if err != nil {
					assert.ErrorIs(t, err, pool.ErrClosed)
					continue
				}
				if err := p.Satisfy(); err != nil {
					assert.ErrorIs(t, err, pool.ErrClosed)
				}
				if _, err := b.Ptr(); err != nil {
					if !assert.True(t, isStale(err), "unexpected %v", err) {
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			_ = p.ReleaseAll()
		}
		require.NoError(t, p.Close())
	}()
	wg.Wait()
}

func isStale(err error) bool {
	for _, s := range []error{pool.ErrReleased, pool.ErrClosed, pool.ErrNotPlaced} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
