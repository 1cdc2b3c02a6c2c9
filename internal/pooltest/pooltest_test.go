package pooltest_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// kernelPTX is a kernel that does nothing, for the fake to load; a fake
// finds its function only once a Go one is registered by its name.
const kernelPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry nothing()
{
	ret;
}
`

// What a helper makes is usable at once and undone when its test ends.
func TestHelpersUndoWhatTheyMakeWhenTheTestEnds(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	f.RegisterKernel("nothing", func(*cudarttest.KernelContext) error { return nil })
	t.Run("uses", func(t *testing.T) {
		p := pooltest.New(t, f, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(1<<20))
		dev := pooltest.Device(t, p, 4096, pool.Name("dev"))
		host := pooltest.Host(t, p, 100, pool.Name("host"))
		require.NoError(t, p.Satisfy())
		want, err := dev.Ptr()
		require.NoError(t, err)
		assert.Equal(t, want, pooltest.Ptr(t, dev))
		hb := pooltest.Bytes(t, host)
		assert.Len(t, hb, 100)
		copy(hb, "host")
		require.NoError(t, f.Memset(0, want, 7, 4096))
		assert.Equal(t, hb, pooltest.Read(t, f, host), "a host buffer's own memory")
		assert.Equal(t, bytes.Repeat([]byte{7}, 4096), pooltest.Read(t, f, dev), "a device buffer's bytes")
		pooltest.Stream(t, f, 0)
		pooltest.Kernel(t, f, 0, kernelPTX, "nothing")
		live := f.Live()
		assert.Equal(t, 1, live.DeviceAllocs)
		assert.Equal(t, 1, live.Streams)
		assert.Equal(t, 1, live.Modules)
	})
	assert.Equal(t, cudarttest.Usage{}, f.Live(), "the pool closed, the stream destroyed and the module unloaded")
}

// recorder is a pooltest.T that keeps the reports and ends the goroutine
// on FailNow, as testing does.
type recorder struct {
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) FailNow()         { runtime.Goexit() }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// stopped runs helper with a recorder and says whether it stopped there,
// with a report naming call.
func stopped(t *testing.T, call string, helper func(pooltest.T)) {
	t.Helper()
	var r recorder
	returned := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(&r)
		returned = true
	}()
	<-done
	assert.False(t, returned, "%s failed and the helper returned", call)
	require.Len(t, r.errors, 1)
	assert.Contains(t, r.errors[0], call)
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// Each helper stops its test, naming the call, when the call fails.
func TestHelpersStopOnFailure(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := pool.New(f, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	b, err := p.WantDevice(256)
	require.NoError(t, err)
	stopped(t, "Buffer.Ptr", func(t pooltest.T) { pooltest.Ptr(t, b) })
	stopped(t, "Buffer.Bytes", func(t pooltest.T) { pooltest.Bytes(t, b) })
	stopped(t, "WantHost", func(t pooltest.T) { pooltest.Host(t, p, 256) })
	stopped(t, "ModuleLoadData", func(t pooltest.T) { pooltest.Kernel(t, f, 0, "not PTX", "nothing") })
	stopped(t, "ModuleGetFunction", func(t pooltest.T) { pooltest.Kernel(t, f, 0, kernelPTX, "missing") })
	stopped(t, "StreamCreate", func(t pooltest.T) { pooltest.Stream(t, f, 7) })
	require.NoError(t, p.Close())
	stopped(t, "WantDevice", func(t pooltest.T) { pooltest.Device(t, p, 256) })
	stopped(t, "pool.New", func(t pooltest.T) { pooltest.New(t, f, pool.WithDeviceBytes(1<<40)) })
}

// After each Reclaim, a buffer's Ptr wraps its sentinel.
func TestReclaims(t *testing.T) {
	var names []string
	for _, r := range pooltest.Reclaims() {
		names = append(names, r.Name)
		p := pooltest.New(t, cudarttest.NewFakeT(t), pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
		b := pooltest.Device(t, p, 256)
		require.NoError(t, p.Satisfy())
		require.NoError(t, r.Do(p))
		_, err := b.Ptr()
		assert.ErrorIs(t, err, r.Is, r.Name)
	}
	assert.Equal(t, []string{"ReleaseAll", "Close"}, names)
}
