// Package pooltest is what the module's tests repeat to get a pool, its
// buffers, streams and kernels ready: each helper makes the call it is
// named for, stops the test at once when that call fails, and undoes what
// it made when the test ends, so that a test's lines are about what it
// checks. It is for this module's tests; users' tests have cudarttest.
package pooltest

import (
	"context"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// T is what the helpers need of a *testing.T or *testing.B.
type T interface {
	require.TestingT
	Helper()
	Cleanup(func())
}

// New is pool.New(rt, opts...). The pool is closed when t ends, before
// what was registered with t.Cleanup earlier (a fake's leak check, a
// library's Close) runs, and t fails if Close does.
func New(t T, rt cudart.Runtime, opts ...pool.Option) *pool.Pool {
	t.Helper()
	p, err := pool.New(rt, opts...)
	require.NoError(t, err, "pool.New")
	t.Cleanup(func() { assert.NoError(t, p.Close(), "Pool.Close") })
	return p
}

// Device is p.WantDevice(size, opts...).
func Device(t T, p *pool.Pool, size uint64, opts ...pool.WantOption) *pool.Buffer {
	t.Helper()
	b, err := p.WantDevice(size, opts...)
	require.NoError(t, err, "WantDevice")
	return b
}

// Host is p.WantHost(size, opts...).
func Host(t T, p *pool.Pool, size uint64, opts ...pool.WantOption) *pool.Buffer {
	t.Helper()
	b, err := p.WantHost(size, opts...)
	require.NoError(t, err, "WantHost")
	return b
}

// Ptr is b.Ptr(), the address of a placed buffer.
func Ptr(t T, b *pool.Buffer) cudart.DevicePtr {
	t.Helper()
	ptr, err := b.Ptr()
	require.NoError(t, err, "Buffer.Ptr")
	return ptr
}

// Bytes is b.Bytes(), the memory of a placed host buffer.
func Bytes(t T, b *pool.Buffer) []byte {
	t.Helper()
	hb, err := b.Bytes()
	require.NoError(t, err, "Buffer.Bytes")
	return hb
}

// Read is what a placed buffer holds: a host buffer's memory itself, a
// device or managed buffer's bytes copied to the host.
func Read(t T, rt cudart.Runtime, b *pool.Buffer) []byte {
	t.Helper()
	if b.Arena() == pool.Host {
		return Bytes(t, b)
	}
	got := make([]byte, b.Size())
	require.NoError(t, rt.Memcpy(b.Device(), cudart.HostMem(got), cudart.DeviceMem(Ptr(t, b), b.Size()), cudart.DeviceToHost), "Memcpy")
	return got
}

// Stream is a new stream on device, destroyed when t ends.
func Stream(t T, rt cudart.Streams, device int) cudart.Stream {
	t.Helper()
	s, err := rt.StreamCreate(device)
	require.NoError(t, err, "StreamCreate")
	t.Cleanup(func() { assert.NoError(t, rt.StreamDestroy(device, s), "StreamDestroy") })
	return s
}

// Kernel is the function name of a module loaded on device from ptx; the
// module is unloaded when t ends.
func Kernel(t T, rt cudart.Kernels, device int, ptx, name string) cudart.Function {
	t.Helper()
	m, err := rt.ModuleLoadData(device, ptx)
	require.NoError(t, err, "ModuleLoadData")
	t.Cleanup(func() { assert.NoError(t, rt.ModuleUnload(device, m), "ModuleUnload") })
	fn, err := rt.ModuleGetFunction(device, m, name)
	require.NoError(t, err, "ModuleGetFunction(%q)", name)
	return fn
}

// SlotSource is what pool.Slots and pool.MultiSlots hand slots out and
// back with, for a test that runs on either.
type SlotSource interface {
	Acquire(ctx context.Context, profile string) (pool.Slot, error)
	Release(sl pool.Slot) error
}

var (
	_ SlotSource = (*pool.Slots)(nil)
	_ SlotSource = (*pool.MultiSlots)(nil)
)

// Reclaim is a way for a pool to take its buffers back, and the sentinel
// that a buffer's calls wrap after it.
type Reclaim struct {
	Name string                 // the pool's method
	Do   func(*pool.Pool) error // calls it
	Is   error                  // pool.ErrReleased or pool.ErrClosed
}

// Reclaims are the ways for a pool to take its buffers back: ReleaseAll
// and Close.
func Reclaims() []Reclaim {
	return []Reclaim{
		{"ReleaseAll", (*pool.Pool).ReleaseAll, pool.ErrReleased},
		{"Close", (*pool.Pool).Close, pool.ErrClosed},
	}
}
