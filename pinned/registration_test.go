package pinned

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

func TestRegisterEveryFlags(t *testing.T) {
	for _, fl := range []Flags{0, Portable, Mapped, Portable | Mapped} {
		t.Run(fl.String(), func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			buf := make([]byte, 100_000)
			b := buf[5:90_005] // neither start nor end on a page boundary
			g, err := Register(f, 0, b, fl)
			require.NoError(t, err)
			got, ok := f.HostRegisterFlags(b)
			require.True(t, ok)
			assert.Equal(t, fl.hostRegister(), got)
			assert.Equal(t, uint64(len(b)), f.Live().RegisteredBytes)
			requireRoundTrip(t, f, b)
			p, err := g.DevicePtr()
			if fl&Mapped != 0 {
				require.NoError(t, err)
				copy(b, pattern(len(b), 5))
				got := make([]byte, len(b))
				require.NoError(t, f.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, uint64(len(b))), cudart.DeviceToHost))
				assert.Equal(t, b, got)
			} else {
				require.ErrorIs(t, err, ErrNotMapped)
			}
			require.NoError(t, g.Unregister())
			requireNothingPinned(t, f, nil)
			require.ErrorIs(t, g.Unregister(), ErrNotRegistered)
			_, err = g.DevicePtr()
			require.ErrorIs(t, err, ErrNotRegistered)
		})
	}
}

func TestRegisterRefuses(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	b := make([]byte, 4096)
	for name, c := range map[string]struct {
		rt    cudart.Runtime
		b     []byte
		flags Flags
		want  error
	}{
		"empty":              {f, nil, 0, ErrInvalidSize},
		"unknown flags":      {f, b, 8, ErrInvalidOption},
		"WriteCombined":      {f, b, WriteCombined, ErrUnsupported},
		"runtime cannot":     {baseOnly{f}, b, 0, ErrUnsupported},
		"runtime cannot map": {noAllocator{f, f}, b, Mapped, ErrUnsupported},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Register(c.rt, 0, c.b, c.flags)
			require.ErrorIs(t, err, c.want)
		})
	}
	assert.Empty(t, f.Calls(), "refused before calling CUDA")
	requireNothingPinned(t, f, nil)
}

func TestRegisterOverlapsAreRefusedBeforeCUDA(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	buf := make([]byte, 3*4096)
	a, err := Register(f, 0, buf[10:5000], 0)
	require.NoError(t, err)
	// Shares a page with a, not a byte: CUDA accepts it, and so must we.
	b, err := Register(f, 0, buf[5000:9000], 0)
	require.NoError(t, err)

	f.ResetCalls()
	for _, r := range [][2]int{{0, 11}, {4999, 5001}, {100, 200}, {0, len(buf)}, {8999, 9500}} {
		_, err := Register(f, 0, buf[r[0]:r[1]], Portable)
		require.ErrorIs(t, err, ErrAlreadyRegistered, "range %v", r)
		assert.Contains(t, err.Error(), "registered by Register")
	}
	assert.Empty(t, f.Calls(), "overlaps are refused before CUDA is called")

	region, err := Alloc(f, 0, 8192)
	require.NoError(t, err)
	_, err = Register(f, 0, region.Bytes()[100:200], 0)
	require.ErrorIs(t, err, ErrAlreadyRegistered)
	assert.Contains(t, err.Error(), "pinned by Alloc with Register")

	require.NoError(t, region.Free())
	require.NoError(t, a.Unregister())
	require.NoError(t, b.Unregister())
	requireNothingPinned(t, f, nil)
}

func TestRegisterMapsCUDAsOwnCodes(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	buf := make([]byte, 8192)

	// Pinned behind the package's back: only CUDA knows, and says 712.
	require.NoError(t, f.HostRegister(0, buf, 0))
	_, err := Register(f, 0, buf[100:200], 0)
	require.ErrorIs(t, err, ErrAlreadyRegistered)
	require.ErrorIs(t, err, cudart.ErrHostMemoryAlreadyRegistered)
	require.NoError(t, f.HostUnregister(0, buf))
	requireNothingPinned(t, f, nil)

	// Unpinned behind the package's back: CUDA says 713.
	g, err := Register(f, 0, buf, 0)
	require.NoError(t, err)
	require.NoError(t, f.HostUnregister(0, buf))
	err = g.Unregister()
	require.ErrorIs(t, err, ErrNotRegistered)
	require.ErrorIs(t, err, cudart.ErrHostMemoryNotRegistered)
	requireNothingPinned(t, f, nil)
}

func TestUnregisterRetriesWhatFailed(t *testing.T) {
	withChunk(t, chunk)
	f := cudarttest.NewFakeT(t)
	buf := make([]byte, 3*chunk)
	g, err := Register(f, 0, buf, 0)
	require.NoError(t, err)
	assert.Equal(t, 3, f.Live().RegisteredAllocs)
	require.NoError(t, f.FailCallNth("cudaHostUnregister", 2, injected))
	require.ErrorIs(t, g.Unregister(), cudart.NewError("", injected))
	assert.Equal(t, 1, f.Live().RegisteredAllocs, "the other chunks were unregistered")
	f.ResetCalls()
	require.NoError(t, g.Unregister())
	assert.Equal(t, []string{"cudaHostUnregister"}, f.Calls(), "only the chunk left is retried")
	requireNothingPinned(t, f, nil)
}

// TestRegisterFaultSweep fails each CUDA call of a Register over three
// chunks in turn: it fails with that error, or succeeds where the call was
// one it can do without, and a failure leaves nothing registered.
func TestRegisterFaultSweep(t *testing.T) {
	withChunk(t, chunk)
	buf := make([]byte, 3*chunk)
	for _, fl := range []Flags{0, Mapped} {
		t.Run(fl.String(), func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			g, err := Register(uva{f}, 0, buf, fl)
			require.NoError(t, err)
			calls := f.Calls()
			require.NoError(t, g.Unregister())
			for n := 1; n <= len(calls); n++ {
				f := cudarttest.NewFake()
				require.NoError(t, f.FailNth(n, injected))
				g, err := Register(uva{f}, 0, buf, fl)
				if err != nil {
					require.ErrorIs(t, err, cudart.NewError("", injected), fmt.Sprint("call ", n))
				} else {
					require.Equal(t, "cudaGetDeviceFlags", calls[n-1], "Register ignored a failed %s", calls[n-1])
					require.NoError(t, g.Unregister())
				}
				requireNothingPinned(t, f, nil)
			}
		})
	}
}
