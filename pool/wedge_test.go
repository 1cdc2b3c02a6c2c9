package pool_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/zerocall"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

func TestNilOptionsAreRefused(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	for _, opts := range [][]pool.Option{{nil}, {pool.WithDeviceBytes(mib), nil}} {
		p, err := pool.New(f, opts...)
		assert.ErrorIs(t, err, pool.ErrInvalidOption)
		assert.ErrorContains(t, err, "is nil")
		assert.Nil(t, p)
	}
	_, err := pool.New(f, pool.WithLogger(nil))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	_, err = pool.New(f, pool.WithDevice(-1))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)

	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithManagedBytes(mib))
	for name, want := range map[string]func(uint64, ...pool.WantOption) (*pool.Buffer, error){
		"WantDevice": p.WantDevice, "WantHost": p.WantHost, "WantManaged": p.WantManaged,
	} {
		b, err := want(256, nil)
		assert.ErrorIs(t, err, pool.ErrInvalidRequest, name)
		assert.Nil(t, b, name)
		_, err = want(256, pool.Name("x"), nil)
		assert.ErrorContains(t, err, `request "x": option 2 of 2 is nil`, name)
	}
	assert.Zero(t, p.Stats().Device.Queued, "a refused request queues nothing")
	b, err := p.WantDevice(256)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	_, err = b.Ptr()
	assert.NoError(t, err, "the pool stays usable")
}

func TestNilAndZeroHandlesAreRefused(t *testing.T) {
	var nilPool *pool.Pool
	var zero pool.Pool
	for name, p := range map[string]*pool.Pool{"nil": nilPool, "zero": &zero} {
		_, err := p.WantDevice(256)
		assert.ErrorIs(t, err, pool.ErrClosed, name)
		assert.ErrorContains(t, err, "not created by New", name)
		assert.ErrorIs(t, p.Satisfy(), pool.ErrClosed, name)
		assert.ErrorIs(t, p.Commit(), pool.ErrClosed, name)
		assert.ErrorIs(t, p.ReleaseAll(), pool.ErrClosed, name)
		assert.ErrorIs(t, p.Close(), pool.ErrClosed, name)
		assert.True(t, p.Stats().Closed, name)
		assert.Empty(t, p.Layout(), name)
	}
	var b *pool.Buffer
	_, err := b.Ptr()
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
	_, err = b.Bytes()
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
	assert.ErrorIs(t, b.Prefetch(0), pool.ErrInvalidRequest)
	assert.Zero(t, b.Offset())
	assert.Zero(t, b.Size())
	_, err = (&pool.Buffer{}).Ptr()
	assert.ErrorIs(t, err, pool.ErrInvalidRequest)
}

// panicCore is a zap core, enabled at every level, that panics on every entry
// below Info and at Warn: the logs of requests, Commit, ReleaseAll and
// exhaustion.
type panicCore struct{ zapcore.Core }

func (c panicCore) Enabled(zapcore.Level) bool { return true }
func (c panicCore) With([]zapcore.Field) zapcore.Core {
	return c
}
func (c panicCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}
func (c panicCore) Write(e zapcore.Entry, _ []zapcore.Field) error {
	if e.Level < zapcore.InfoLevel || e.Level == zapcore.WarnLevel {
		panic("logger panics: " + e.Message)
	}
	return nil
}
func (c panicCore) Sync() error { return nil }

// requirePanics runs f and requires that it panics.
func requirePanics(t *testing.T, what string, f func()) {
	t.Helper()
	require.Panics(t, f, what)
}

func TestAPanickingLoggerLeavesNoLockHeld(t *testing.T) {
	p, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithLogger(zap.New(panicCore{zapcore.NewNopCore()})))
	requirePanics(t, "WantDevice logs the request", func() { _, _ = p.WantDevice(mib) })
	assert.Equal(t, 1, p.Stats().Device.Queued, "the request was queued before the log")
	requirePanics(t, "WantDevice logs the request", func() { _, _ = p.WantDevice(mib) })
	requirePanics(t, "Satisfy logs the exhaustion", func() { _ = p.Satisfy() })
	assert.Equal(t, 2, p.Stats().Device.Queued)
	requirePanics(t, "ReleaseAll logs", func() { _ = p.ReleaseAll() })
	assert.Zero(t, p.Stats().Device.Queued, "ReleaseAll released before it logged")
	requirePanics(t, "WantDevice logs the request", func() { _, _ = p.WantDevice(256) })
	requirePanics(t, "Commit logs", func() { _ = p.Commit() })
	st := p.Stats()
	assert.True(t, st.Committed)
	assert.Equal(t, 1, st.Device.Placed)
}

// panicky is a runtime whose DeviceSynchronize panics while armed, and whose
// MallocManaged panics while managedPanics.
type panicky struct {
	cudart.Full
	armed, managedPanics bool
}

func (r *panicky) MallocManaged(device int, size uint64, flags cudart.MemAttachFlags) (cudart.DevicePtr, error) {
	if r.managedPanics {
		panic("runtime panics")
	}
	return r.Full.MallocManaged(device, size, flags)
}

func (r *panicky) DeviceSynchronize(device int) error {
	if r.armed {
		panic("runtime panics")
	}
	return r.Full.DeviceSynchronize(device)
}

func TestAPanickingRuntimeLeavesNoLockHeld(t *testing.T) {
	rt := &panicky{Full: cudarttest.NewFakeT(t)}
	p, err := pool.New(rt, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	require.NoError(t, err)
	b, err := p.WantDevice(256)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	rt.armed = true
	requirePanics(t, "ReleaseAll waits for the device", func() { _ = p.ReleaseAll() })
	assert.NoError(t, b.Placed(), "the buffer is still placed after ReleaseAll's panic")
	require.NoError(t, b.Use(), "the buffer can be held after ReleaseAll's panic")
	b.Done()
	requirePanics(t, "Close waits for the device", func() { _ = p.Close() })
	assert.Equal(t, 1, p.Stats().Device.Placed, "nothing was released by the call that panicked")
	assert.NoError(t, b.Placed(), "the buffer is still placed after Close's panic")
	require.NoError(t, b.Use(), "the buffer can be held after Close's panic")
	b.Done()
	rt.armed = false
	require.NoError(t, p.ReleaseAll())
	require.NoError(t, p.Close())
}

func TestAPanicInNewTakesBackWhatItTook(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	rt := &panicky{Full: f, managedPanics: true}
	requirePanics(t, "New reserves the managed arena last", func() {
		_, _ = pool.New(rt, pool.WithDeviceBytes(mib), pool.WithHostBytes(mib), pool.WithHostPinning(pinned.MethodRegisterNoHugePages),
			pool.WithManagedBytes(mib))
	})
	assert.Empty(t, f.Live(), "the device and host arenas were freed")
}

// Every method of a nil *Pool and a nil *Buffer returns instead of panicking.
func TestNoMethodOfANilHandlePanics(t *testing.T) {
	for _, v := range []reflect.Value{reflect.ValueOf((*pool.Pool)(nil)), reflect.ValueOf((*pool.Buffer)(nil))} {
		zerocall.Methods(v, func(name string, call func()) { assert.NotPanics(t, call, name) })
	}
}
