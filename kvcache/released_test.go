package kvcache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// TestEveryCallFailsOnceThePoolTookThePagesBack: after the pool's
// ReleaseAll (its buffers' bytes free for others) or Close, every call of
// the Cache, its Seqs and its Tables that can fail refuses with
// ErrReleased, wrapping the pool's own error and saying to make a new
// Cache, and changes nothing: with the fake's memory tool listening or
// not, since the pool, not the tool, tells.
func TestEveryCallFailsOnceThePoolTookThePagesBack(t *testing.T) {
	calls := []struct {
		name string
		call func(c *Cache, tb *Tables, a, w Seq) error
	}{
		{"Create", func(c *Cache, _ *Tables, _, _ Seq) error { _, err := c.Create().Append(toks(0, 1)); return err }},
		{"Append", func(_ *Cache, _ *Tables, a, _ Seq) error { _, err := a.Append(toks(6, 1)); return err }},
		{"Append to a fork", func(_ *Cache, _ *Tables, a, _ Seq) error {
			f, err := a.Fork()
			if err != nil {
				return err
			}
			_, err = f.Append(toks(6, 1)) // its copy-on-write
			return err
		}},
		{"Fork", func(_ *Cache, _ *Tables, a, _ Seq) error { _, err := a.Fork(); return err }},
		{"Free", func(_ *Cache, _ *Tables, a, _ Seq) error { return a.Free() }},
		{"Free swapped out", func(_ *Cache, _ *Tables, _, w Seq) error { return w.Free() }},
		{"Pages", func(_ *Cache, _ *Tables, a, _ Seq) error { _, err := a.Pages(nil); return err }},
		{"SwapOut", func(_ *Cache, _ *Tables, a, _ Seq) error { return a.SwapOut() }},
		{"SwapIn", func(_ *Cache, _ *Tables, _, w Seq) error { return w.SwapIn() }},
		{"Admit", func(c *Cache, _ *Tables, _, _ Seq) error { return c.Admit(toks(0, 4), 1) }},
		{"Scope", func(c *Cache, _ *Tables, a, _ Seq) error { return c.Scope(a) }},
		{"NewTables", func(c *Cache, _ *Tables, _, _ Seq) error { _, err := c.NewTables(1, 1); return err }},
		{"Sync", func(_ *Cache, tb *Tables, a, _ Seq) error { _, err := tb.Sync([]Seq{a}); return err }},
	}
	for _, memcheck := range []bool{true, false} {
		for _, how := range pooltest.Reclaims() {
			for _, tt := range calls {
				name := how.Name + "/" + tt.name
				if !memcheck {
					name += "/without memcheck"
				}
				t.Run(name, func(t *testing.T) {
					var opts []cudarttest.Option
					if !memcheck {
						opts = append(opts, cudarttest.WithoutMemcheck())
					}
					rt := cudarttest.NewFakeT(t, opts...)
					p := pooltest.New(t, rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(1<<20))
					c, err := New(rt, p, small, WithPages(8), WithSwap(4))
					require.NoError(t, err)
					require.Equal(t, memcheck, c.annotated)
					tb, err := c.NewTables(2, 4)
					require.NoError(t, err)
					t.Cleanup(func() { require.NoError(t, tb.Close()) })
					a, w := c.Create(), c.Create()
					_, err = a.Append(toks(0, 6))
					require.NoError(t, err)
					_, err = w.Append(toks(100, 6))
					require.NoError(t, err)
					require.NoError(t, w.SwapOut())
					_, err = tb.Sync([]Seq{a})
					require.NoError(t, err)
					pa := pagesOf(t, a)
					require.NoError(t, rt.DeviceSynchronize(0))

					require.NoError(t, how.Do(p))
					if how.Is == pool.ErrReleased {
						// The bytes the pages were in are another buffer's now.
						_, err := p.WantDevice(1<<20, pool.Name("next model"))
						require.NoError(t, err)
						require.NoError(t, p.Satisfy())
					}
					before := c.Stats()
					err = tt.call(c, tb, a, w)
					require.ErrorIs(t, err, ErrReleased)
					require.ErrorIs(t, err, how.Is, "it wraps the pool's error")
					assert.Contains(t, err.Error(), "make a new Cache with New")
					assert.Equal(t, before, c.Stats(), "it changes nothing")
					assert.Equal(t, 6, a.Len())
					assert.True(t, w.Swapped())
					assert.Equal(t, pa, c.seqs[a.id].pages)
				})
			}
		}
	}
}

// TestANewCacheAfterReleaseAll: after ReleaseAll the pool places a new
// Cache, which works, while the old one refuses.
func TestANewCacheAfterReleaseAll(t *testing.T) {
	c, rt, p := newCache(t, WithPages(4))
	old := c.Create()
	_, err := old.Append(toks(0, 5))
	require.NoError(t, err)
	require.NoError(t, p.ReleaseAll())
	n, err := New(rt, p, small, WithPages(4))
	require.NoError(t, err)
	s := n.Create()
	_, err = s.Append(toks(0, 5))
	require.NoError(t, err)
	_, err = old.Append(toks(5, 1))
	require.EqualError(t, err, `kvcache: cache released with its pool's buffers: Append of seq 0: the pool took the pages back (pool: buffer released by ReleaseAll: device buffer "kvcache pages (4 × 1.0 KiB)"); make a new Cache with New`)
	assert.Equal(t, Seq{c: c, id: none}, c.Create(), "the old Cache starts no sequence")
}

// TestReleaseAllFromAnotherGoroutineWhileAppending (for -race): while one
// goroutine appends, to a sequence and to forks of it whose first Append
// copies the shared last page on the device, another releases the pool,
// whose growable arena then gives its memory back. Each call either
// succeeds before the release, its copy done before the memory goes, or
// is refused with ErrReleased after it, changing nothing; no copy runs
// after the release, which the fake's memory check would fault.
func TestReleaseAllFromAnotherGoroutineWhileAppending(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	p, err := pool.New(rt, pool.WithGrowableDevice(64<<20), pool.WithTrimOnRelease(), pool.WithHostBytes(1<<20))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	c, err := New(rt, p, small, WithPages(64))
	require.NoError(t, err)
	a := c.Create()
	_, err = a.Append(toks(0, 6))
	require.NoError(t, err)

	refused := make(chan error, 1)
	go func() {
		n := a.Len()
		for i := 0; ; i++ {
			f, err := a.Fork()
			if err == nil {
				_, err = f.Append(toks(1000+i, 1)) // copies the shared last page
			}
			if err == nil {
				err = f.Free()
			}
			if err == nil {
				if _, err = a.Append(toks(6+i, 1)); err == nil {
					n++
				}
			}
			if err == nil && a.Len()%(4*32) == 0 {
				err = a.Free()
				if err == nil {
					a = c.Create()
					n = 0
				}
			}
			if err != nil {
				before := c.Stats()
				_, again := a.Append(toks(0, 1))
				assert.ErrorIs(t, again, ErrReleased)
				assert.Equal(t, before, c.Stats(), "a refused call changes nothing")
				assert.Equal(t, n, a.Len())
				refused <- err
				return
			}
		}
	}()
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, p.ReleaseAll())
	err = <-refused
	require.ErrorIs(t, err, ErrReleased)
	require.ErrorIs(t, err, pool.ErrReleased)
	require.NoError(t, rt.DeviceSynchronize(0), "no copy ran on the memory given back")
}

// panicky is a runtime whose MemcpyAsync panics once armed, as a
// runtime's call may.
type panicky struct {
	cudart.Full
	armed bool
}

func (r *panicky) MemcpyAsync(device int, dst, src cudart.Mem, kind cudart.MemcpyKind, s cudart.Stream) error {
	if r.armed {
		panic("kvcache test: MemcpyAsync")
	}
	return r.Full.MemcpyAsync(device, dst, src, kind, s)
}

// A copy-on-write whose copy panics leaves no hold on the page buffer: the
// pool's ReleaseAll, which waits for the Cache's holds, still returns.
func TestAPanickingCopyLeavesNoHold(t *testing.T) {
	rt := &panicky{Full: cudarttest.Open(t)}
	c, _, p := newCacheOn(t, rt)
	a := c.Create()
	_, err := a.Append(toks(0, 3))
	require.NoError(t, err)
	b, err := a.Fork()
	require.NoError(t, err)
	rt.armed = true
	assert.Panics(t, func() { _, _ = b.Append(toks(3, 1)) })
	rt.armed = false
	done := make(chan error, 1)
	go func() { done <- p.ReleaseAll() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ReleaseAll still waiting 5 s after a copy-on-write panicked: a hold was left")
	}
}
