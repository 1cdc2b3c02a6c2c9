package pinned

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
)

// The tests in this file run against real CUDA on device 0 and skip, with
// the loader's message, where it cannot be loaded or has no device. They
// share one Library, never closed: unloading the runtime between tests would
// tear CUDA down and start it again.

var gpuLib struct {
	once sync.Once
	lib  cudart.Library
	skip string
}

func gpu(t *testing.T) cudart.Library {
	t.Helper()
	gpuLib.once.Do(func() {
		l, err := cudart.Open()
		if err != nil {
			gpuLib.skip = "CUDA not available: " + err.Error()
			return
		}
		if n, err := l.DeviceCount(); err != nil || n == 0 {
			gpuLib.skip = fmt.Sprintf("no CUDA device (%d devices, %v)", n, err)
			_ = l.Close()
			return
		}
		gpuLib.lib = l
	})
	if gpuLib.lib == nil {
		t.Skip(gpuLib.skip)
	}
	return gpuLib.lib
}

func TestGPUAllocEveryMethod(t *testing.T) {
	lib := gpu(t)
	const size = 64<<20 + 4096
	for _, m := range Methods() {
		for _, fl := range []Flags{0, Portable | Mapped, WriteCombined} {
			t.Run(fmt.Sprintf("%s/%s", m, fl), func(t *testing.T) {
				r, err := Alloc(lib, 0, size, WithMethod(m), WithFlags(fl), WithFallback(fl&WriteCombined != 0))
				require.NoError(t, err)
				assert.Equal(t, wantMethod(m, fl), r.Method())
				require.Len(t, r.Bytes(), size)
				if fl&WriteCombined == 0 {
					requireRoundTrip(t, lib, r.Bytes())
				}
				if fl&Mapped != 0 {
					requireZeroCopy(t, lib, r)
				}
				require.NoError(t, r.Free())
				assert.Zero(t, pinnedRanges.len())
			})
		}
	}
}

// TestGPUMappedChunksAreContiguous registers 64 MiB in four chunks, mapped:
// with unified addressing, CUDA maps each chunk at its host address, so the
// region has one device address and no fallback is needed. One CUDA call on
// the memory must stay within a chunk: on an H200 with CUDA 13 a copy
// spanning two registrations fails with cudaErrorInvalidValue, whether it
// goes through the device address or the host one.
func TestGPUMappedChunksAreContiguous(t *testing.T) {
	lib := gpu(t)
	const chunk = 16 << 20
	withChunk(t, chunk)
	r, err := Alloc(lib, 0, 4*chunk, WithFlags(Mapped), WithFallback(false))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Free()) })
	p, err := r.DevicePtr()
	require.NoError(t, err)
	b := r.Bytes()
	copy(b, pattern(len(b), 3))
	got := make([]byte, chunk)
	for off := uint64(0); off < 4*chunk; off += chunk {
		require.NoError(t, lib.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p.Add(off), chunk), cudart.DeviceToHost))
		require.Equal(t, b[off:off+chunk], got, "chunk at %d read through the one device address", off)
		requireRoundTrip(t, lib, b[off:off+chunk])
	}
}

// TestGPURegisterRules checks on real CUDA what Register's documentation
// says of it: unaligned ranges and ranges that share a page but not a byte
// register, and CUDA's own overlap error is ErrAlreadyRegistered.
func TestGPURegisterRules(t *testing.T) {
	lib := gpu(t)
	buf := make([]byte, 8<<20)
	a, err := Register(lib, 0, buf[5:4<<20+5], Mapped)
	require.NoError(t, err, "an unaligned range")
	b, err := Register(lib, 0, buf[4<<20+5:8<<20-7], 0)
	require.NoError(t, err, "a range that shares a page with another")
	requireRoundTrip(t, lib, buf[5:4<<20+5])
	requireRoundTrip(t, lib, buf[4<<20+5:8<<20-7])
	p, err := a.DevicePtr()
	require.NoError(t, err)
	copy(buf[5:], "zero-copy")
	got := make([]byte, 9)
	require.NoError(t, lib.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, 9), cudart.DeviceToHost))
	assert.Equal(t, "zero-copy", string(got))
	require.NoError(t, a.Unregister())
	require.NoError(t, b.Unregister())

	other := make([]byte, 1<<20)
	require.NoError(t, lib.HostRegister(0, other, 0))
	_, err = Register(lib, 0, other[4096:8192], 0)
	require.ErrorIs(t, err, ErrAlreadyRegistered)
	require.ErrorIs(t, err, cudart.ErrHostMemoryAlreadyRegistered)
	require.NoError(t, lib.HostUnregister(0, other))
	assert.Zero(t, pinnedRanges.len())
}
