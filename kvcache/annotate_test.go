package kvcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// newCheckedCache is a Cache on a fake that enforces the memory
// annotations (NewFakeT's default), whose pool is closed at the end even
// after a sticky fault.
func newCheckedCache(t *testing.T, pages int, opts ...Option) (*Cache, *cudarttest.Fake) {
	t.Helper()
	rt := cudarttest.NewFakeT(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(1<<20))
	require.NoError(t, err)
	t.Cleanup(func() {
		if rt.DeviceSynchronize(0) != nil {
			require.NoError(t, rt.DeviceReset(0))
			require.ErrorIs(t, p.Close(), pool.ErrDeviceReset)
			return
		}
		require.NoError(t, p.Close())
	})
	c, err := New(rt, p, small, append([]Option{WithPages(pages)}, opts...)...)
	require.NoError(t, err)
	require.True(t, c.annotated, "the fake listens")
	return c, rt
}

// readOnStream reads a page's first bytes with a copy queued on the default
// stream, as a kernel of the next step would, and waits for it.
func readOnStream(c *Cache, rt *cudarttest.Fake, id int32) error {
	b, err := rt.MallocHost(0, 64)
	if err != nil {
		return err
	}
	defer func() { _ = rt.FreeHost(b) }()
	if err := rt.MemcpyAsync(0, cudart.HostMem(b), cudart.DeviceMem(c.PagePtr(id), 64), cudart.DeviceToHost, 0); err != nil {
		return err
	}
	return rt.StreamSynchronize(0, 0)
}

func regionNames(t *testing.T, c *Cache, rt *cudarttest.Fake) []string {
	t.Helper()
	h, ok := rt.MemHeaps()[c.base-cudart.DevicePtr(c.buf.Offset())]
	require.True(t, ok)
	rs, err := rt.MemRegions(h)
	require.NoError(t, err)
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestTheToolSeesThePagesHeld(t *testing.T) {
	c, rt := newCheckedCache(t, 8)
	assert.Empty(t, regionNames(t, c, rt), "no page is held yet, and the buffer is no region")
	a := c.Create()
	_, err := a.Append(toks(0, 6))
	require.NoError(t, err)
	b, err := a.Fork()
	require.NoError(t, err)
	assert.Equal(t, []string{"kvcache page 0 (seqs 0, 1)", "kvcache page 1 (seqs 0, 1)"}, regionNames(t, c, rt))
	_, err = b.Append(toks(6, 1))
	require.NoError(t, err, "the copy-on-write's copy is allowed")
	assert.Equal(t, []string{"kvcache page 0 (seqs 0, 1)", "kvcache page 1 (seq 0)", "kvcache page 2 (seq 1)"}, regionNames(t, c, rt))
	require.NoError(t, a.Free())
	assert.Equal(t, []string{"kvcache page 0 (seq 1)", "kvcache page 2 (seq 1)"}, regionNames(t, c, rt))
	require.NoError(t, readOnStream(c, rt, 2))
}

// TestAReadOfAFreedPageFailsNamingIt: a copy (or kernel) that reads a page
// after its sequence freed it faults on the fake, and the message names the
// page and the sequence that held it.
func TestAReadOfAFreedPageFailsNamingIt(t *testing.T) {
	c, rt := newCheckedCache(t, 8)
	a, _ := twoSeqs(t, c, 8, 4)
	pa := pagesOf(t, a)
	require.NoError(t, readOnStream(c, rt, pa[1]), "a held page reads")
	require.NoError(t, a.Free())
	err := readOnStream(c, rt, pa[1])
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), `it was in "kvcache page 1 (seq 0)"`)
}

// TestScopeCatchesAPageOutsideTheBatch: with the tool's view narrowed to a
// batch, reading a page another sequence holds faults, naming that page and
// its sequence; widened again, it reads.
func TestScopeCatchesAPageOutsideTheBatch(t *testing.T) {
	c, rt := newCheckedCache(t, 8)
	a, b := twoSeqs(t, c, 4, 4)
	require.NoError(t, c.Scope(b))
	assert.Equal(t, []string{"kvcache page 1 (seq 1)"}, regionNames(t, c, rt))
	_, err := b.Append(toks(104, 1))
	require.NoError(t, err, "the batch grows in scope")
	assert.Equal(t, []string{"kvcache page 1 (seq 1)", "kvcache page 2 (seq 1)"}, regionNames(t, c, rt))
	require.NoError(t, c.Scope())
	assert.Len(t, regionNames(t, c, rt), 3)
	require.NoError(t, c.Scope(b))
	require.NoError(t, readOnStream(c, rt, 1))
	err = readOnStream(c, rt, pagesOf(t, a)[0])
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), `it was in "kvcache page 0 (seq 0)"`)
}
