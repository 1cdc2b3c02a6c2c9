package pool_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// TestPlacedAndUseAnswerAsPtr: Placed and Use, which read atomics where
// the buffer is placed, refuse exactly when Ptr does, with Ptr's error:
// before Satisfy, after ReleaseAll, Close or a reset of the device, and for
// a nil handle.
func TestPlacedAndUseAnswerAsPtr(t *testing.T) {
	for _, tt := range []struct {
		name string
		then func(t *testing.T, p *pool.Pool, reset func() error) *pool.Buffer
		is   error
	}{
		{"placed", func(t *testing.T, p *pool.Pool, _ func() error) *pool.Buffer { return placedBuffer(t, p) }, nil},
		{"queued", func(t *testing.T, p *pool.Pool, _ func() error) *pool.Buffer {
			b, err := p.WantDevice(256)
			require.NoError(t, err)
			return b
		}, pool.ErrNotPlaced},
		{"after ReleaseAll", func(t *testing.T, p *pool.Pool, _ func() error) *pool.Buffer {
			b := placedBuffer(t, p)
			require.NoError(t, p.ReleaseAll())
			return b
		}, pool.ErrReleased},
		{"after Close", func(t *testing.T, p *pool.Pool, _ func() error) *pool.Buffer {
			b := placedBuffer(t, p)
			require.NoError(t, p.Close())
			return b
		}, pool.ErrClosed},
		{"after a reset", func(t *testing.T, p *pool.Pool, reset func() error) *pool.Buffer {
			b := placedBuffer(t, p)
			require.NoError(t, reset())
			return b
		}, pool.ErrDeviceReset},
		{"nil handle", func(*testing.T, *pool.Pool, func() error) *pool.Buffer { return nil }, pool.ErrInvalidRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, f := newPool(t, pool.WithDeviceBytes(mib))
			b := tt.then(t, p, func() error { return f.DeviceReset(0) })
			_, want := b.Ptr()
			placed, use := b.Placed(), b.Use()
			if use == nil {
				b.Done()
			}
			if tt.is == nil {
				require.NoError(t, want)
				assert.NoError(t, placed)
				assert.NoError(t, use)
				return
			}
			require.ErrorIs(t, want, tt.is)
			assert.Equal(t, want, placed)
			assert.Equal(t, want, use)
			if tt.name == "after a reset" {
				_ = p.Close() // says ErrDeviceReset, once
			}
		})
	}
}

func placedBuffer(t *testing.T, p *pool.Pool) *pool.Buffer {
	t.Helper()
	b := pooltest.Device(t, p, 256)
	require.NoError(t, p.Satisfy())
	return b
}

// TestReleaseAllAndCloseWaitForUse: a ReleaseAll or Close from another
// goroutine returns only after the hold of Use is Done, and the buffer is
// refused after; a ReleaseAll whose wait for the device fails leaves the
// buffer placed, for Placed and Use as for Ptr.
func TestReleaseAllAndCloseWaitForUse(t *testing.T) {
	for _, tt := range pooltest.Reclaims() {
		t.Run(tt.Name, func(t *testing.T) {
			p, _ := newPool(t, pool.WithDeviceBytes(mib))
			b := placedBuffer(t, p)
			require.NoError(t, b.Use())
			done := make(chan error)
			go func() { done <- tt.Do(p) }()
			select {
			case err := <-done:
				t.Fatalf("%s returned (%v) while the buffer was held", tt.Name, err)
			case <-time.After(50 * time.Millisecond):
			}
			b.Done()
			require.NoError(t, <-done)
			assert.ErrorIs(t, b.Placed(), tt.Is)
			assert.ErrorIs(t, b.Use(), tt.Is)
		})
	}
	t.Run("failed ReleaseAll", func(t *testing.T) {
		p, f := newPool(t, pool.WithDeviceBytes(mib))
		b := placedBuffer(t, p)
		require.NoError(t, f.FailCall("cudaDeviceSynchronize", 1))
		require.Error(t, p.ReleaseAll())
		f.ClearFaults()
		_, err := b.Ptr()
		require.NoError(t, err)
		assert.NoError(t, b.Placed())
		require.NoError(t, b.Use())
		b.Done()
	})
}

// TestUseRacesReleaseAll (for -race): goroutines holding the buffer with
// Use, writing a byte of a host buffer between Use and Done, and asking
// Placed, while another releases the pool: each hold either comes before
// the release, its write seen by the release, or is refused with
// ErrReleased after it; none writes after.
func TestUseRacesReleaseAll(t *testing.T) {
	p, _ := newPool(t, pool.WithHostBytes(mib))
	b, err := p.WantHost(256)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	mem, err := b.Bytes()
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if g%2 == 0 {
					if err := b.Placed(); err != nil {
						assert.ErrorIs(t, err, pool.ErrReleased)
						return
					}
					continue
				}
				if err := b.Use(); err != nil {
					assert.ErrorIs(t, err, pool.ErrReleased)
					return
				}
				mem[g]++ // a race with the release's reads below, if the hold did not keep it off
				b.Done()
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, p.ReleaseAll())
	seen := mem[1] // after the release: no hold writes from here
	wg.Wait()
	assert.Equal(t, seen, mem[1], "a write after ReleaseAll returned")
	assert.ErrorIs(t, b.Placed(), pool.ErrReleased)
}
