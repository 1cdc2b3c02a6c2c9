package pinned

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

const chunk = 64 << 10

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestSplit(t *testing.T) {
	withChunk(t, chunk)
	b := make([]byte, 3*chunk+100)
	parts := split(b)
	require.Len(t, parts, 4)
	for i, p := range parts[:3] {
		assert.Len(t, p, chunk)
		assert.Equal(t, cap(p), len(p), "a chunk must not reach into the next")
		assert.Equal(t, addr(b)+uintptr(i*chunk), addr(p))
	}
	assert.Len(t, parts[3], 100)
}

func TestAllocRegistersInChunks(t *testing.T) {
	f, maps := chunkedFake(t)
	r, err := Alloc(f, 0, 3*chunk+4096, WithFallback(false))
	require.NoError(t, err)
	assert.Equal(t, 4, count(f.Calls(), "cudaHostRegister"))
	assert.Equal(t, 4, f.Live().RegisteredAllocs)
	requireRoundTrip(t, f, r.Bytes())
	f.ResetCalls()
	require.NoError(t, r.Free())
	assert.Equal(t, 4, count(f.Calls(), "cudaHostUnregister"))
	requireNothingPinned(t, f, maps)
}

func TestChunkFailureUnregistersTheChunksBefore(t *testing.T) {
	f, maps := chunkedFake(t)
	require.NoError(t, f.FailCallNth("cudaHostRegister", 2, 999))
	_, err := Alloc(f, 0, 3*chunk, WithFallback(false))
	require.ErrorIs(t, err, cudart.NewError("", 999))
	assert.Contains(t, err.Error(), "chunk 2 of 3")
	assert.Equal(t, []string{"cudaHostRegister", "cudaHostRegister", "cudaHostUnregister"}, f.Calls())
	requireNothingPinned(t, f, maps)
}

// uva maps registered memory at its host address, as CUDA does on a system
// with unified addressing whose devices can use the host pointer: chunks
// registered one by one are then contiguous on the device too. The fake
// leaves a gap between ranges, so that contiguity is never an accident.
type uva struct{ *cudarttest.Fake }

func (u uva) HostGetDevicePointer(device int, b []byte) (cudart.DevicePtr, error) {
	if _, err := u.Fake.HostGetDevicePointer(device, b); err != nil {
		return 0, err
	}
	return cudart.DevicePtr(addr(b)), nil
}

func TestMappedChunksNeedContiguousDeviceAddresses(t *testing.T) {
	f, maps := chunkedFake(t)

	r, err := Alloc(uva{f}, 0, 3*chunk, WithFlags(Mapped), WithFallback(false))
	require.NoError(t, err)
	p, err := r.DevicePtr()
	require.NoError(t, err)
	assert.Equal(t, cudart.DevicePtr(addr(r.Bytes())), p)
	require.NoError(t, r.Free())

	_, err = Alloc(f, 0, 3*chunk, WithFlags(Mapped), WithFallback(false))
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "chunk 2 of 3 is mapped at")
	requireNothingPinned(t, f, maps)

	r, err = Alloc(f, 0, 3*chunk, WithFlags(Mapped))
	require.NoError(t, err)
	assert.Equal(t, MethodHostAlloc, r.Method(), "falls back to one cudaHostAlloc, which has one device address")
	requireZeroCopy(t, f, r)
	require.NoError(t, r.Free())
	requireNothingPinned(t, f, maps)
}

func TestFailedCleanupLeavesItPinnedAndSaysSo(t *testing.T) {
	f, maps := chunkedFake(t)
	require.NoError(t, f.FailCallNth("cudaHostRegister", 3, 999))
	require.NoError(t, f.FailCall("cudaHostUnregister", 999))
	_, err := Alloc(f, 0, 3*chunk)
	require.ErrorIs(t, err, errLeftPinned)
	assert.NotContains(t, f.Calls(), "cudaHostAlloc", "no fallback while memory is left pinned")
	assert.Equal(t, 2, f.Live().RegisteredAllocs)
	assert.Equal(t, 1, pinnedRanges.len(), "the range stays claimed while pinned")
	assert.Equal(t, 1, maps.count(), "pinned memory must not be unmapped")

	f.ClearFaults()
	forceRelease(t, f)
	requireNothingPinned(t, f, maps)
}

// forceRelease unpins and unmaps what a failed cleanup left behind, which
// only a test can find.
func forceRelease(t *testing.T, f *cudarttest.Fake) {
	t.Helper()
	pinnedRanges.mu.Lock()
	spans := slices.Clone(pinnedRanges.spans)
	pinnedRanges.spans = nil
	pinnedRanges.mu.Unlock()
	for _, s := range spans {
		for _, c := range split(s.keep) {
			if _, ok := f.HostRegisterFlags(c); ok {
				require.NoError(t, f.HostUnregister(0, c))
			}
		}
		require.NoError(t, unmapAnon(s.keep))
	}
}
