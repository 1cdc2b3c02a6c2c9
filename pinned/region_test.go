package pinned

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/opt"
)

var flagCases = []Flags{0, Portable, Mapped, Portable | Mapped, WriteCombined, Mapped | WriteCombined, Portable | Mapped | WriteCombined}

// wantMethod is the method Alloc must use on a full runtime.
func wantMethod(m Method, f Flags) Method {
	if m.registers() && f&WriteCombined != 0 {
		return MethodHostAlloc
	}
	return m
}

func TestAllocEveryMethodAndFlags(t *testing.T) {
	const size = 3<<20 + 123 // not a whole number of pages
	for _, m := range Methods() {
		for _, fl := range flagCases {
			t.Run(fmt.Sprintf("%s/%s", m, fl), func(t *testing.T) {
				maps := countMappings(t)
				f := cudarttest.NewFakeT(t)
				r, err := Alloc(f, 0, size, WithMethod(m), WithFlags(fl), WithWorkers(3))
				require.NoError(t, err)
				assert.Equal(t, wantMethod(m, fl), r.Method())
				assert.Equal(t, fl, r.Flags())
				b := r.Bytes()
				require.Len(t, b, size)

				live := f.Live()
				if r.Method().registers() {
					got, ok := f.HostRegisterFlags(b)
					require.True(t, ok, "memory not registered with the fake")
					assert.Equal(t, fl.hostRegister(), got)
					assert.Equal(t, 1, live.RegisteredAllocs)
					assert.Equal(t, uint64(size), live.RegisteredBytes)
					assert.Equal(t, 1, maps.count())
				} else {
					got, ok := f.HostAllocFlags(b)
					require.True(t, ok, "memory not from cudaHostAlloc")
					assert.Equal(t, fl.hostAlloc(), got)
					assert.Equal(t, 1, live.HostAllocs)
					assert.Zero(t, maps.count())
				}

				requireRoundTrip(t, f, b)
				if fl&Mapped != 0 {
					requireZeroCopy(t, f, r)
				} else {
					_, err := r.DevicePtr()
					assert.ErrorIs(t, err, ErrNotMapped)
				}

				require.NoError(t, r.Free())
				assert.Nil(t, r.Bytes())
				_, err = r.DevicePtr()
				assert.ErrorIs(t, err, ErrFreed)
				require.NoError(t, r.Free(), "Free is idempotent")
				requireNothingPinned(t, f, maps)
			})
		}
	}
}

// requireRoundTrip copies b to the device and back.
func requireRoundTrip(t *testing.T, rt cudart.Runtime, b []byte) {
	t.Helper()
	want := pattern(len(b), 3)
	copy(b, want)
	d, err := rt.Malloc(0, uint64(len(b)))
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Free(0, d)) }()
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(d, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice))
	clear(b)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(d, uint64(len(b))), cudart.DeviceToHost))
	require.Equal(t, want, b)
}

// requireZeroCopy checks that the device address reads and writes the
// region's own bytes.
func requireZeroCopy(t *testing.T, rt cudart.Runtime, r *Region) {
	t.Helper()
	p, err := r.DevicePtr()
	require.NoError(t, err)
	require.NotZero(t, p)
	b := r.Bytes()
	n := uint64(len(b))
	copy(b, pattern(len(b), 9))
	got := make([]byte, n)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(p, n), cudart.DeviceToHost))
	require.Equal(t, b, got, "device reads of the mapped address see the host bytes")
	require.NoError(t, rt.Memset(0, p.Add(n-10), 0xAB, 10))
	require.Equal(t, []byte{0xAB, 0xAB}, b[n-2:], "device writes land in the host bytes")
}

func TestAllocRejects(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	for name, c := range map[string]struct {
		size uint64
		opts []Option
		want error
	}{
		"zero size":      {0, nil, ErrInvalidSize},
		"huge size":      {1 << 63, nil, ErrInvalidSize},
		"unknown method": {4096, []Option{WithMethod(Method(7))}, ErrInvalidOption},
		"unknown flags":  {4096, []Option{WithFlags(Mapped | 16)}, ErrInvalidOption},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Alloc(f, 0, c.size, c.opts...)
			require.ErrorIs(t, err, c.want)
		})
	}
	assert.Empty(t, f.Calls(), "refused before calling CUDA")
	_, err := Alloc(f, 0, 1<<63)
	assert.ErrorContains(t, err, "asked for 9223372036854775808 B; want 1 B to 9223372036854775807 B",
		"exact bytes: rounded, both are 8.0 EiB")
}

func TestAllocErrorSaysWhatWasAsked(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithHostMemory(1<<20))
	_, err := Alloc(f, 0, 3<<20, WithMethod(MethodHostAlloc))
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Contains(t, err.Error(), "3.0 MiB")
}

func TestWorkersAndFlagsStrings(t *testing.T) {
	assert.Equal(t, "0", Flags(0).String())
	assert.Equal(t, "Portable|Mapped|WriteCombined", (Portable | Mapped | WriteCombined).String())
	assert.Equal(t, "Mapped|0x10", (Mapped | 16).String())
	assert.Equal(t, "RegisterNoHugePages", MethodRegisterNoHugePages.String())
	assert.Equal(t, "Method(-1)", Method(-1).String())
	c := defaults()
	require.NoError(t, opt.Configure(&c, []Option{WithWorkers(0)}, ErrInvalidOption))
	assert.Equal(t, defaults().workers, c.workers, "WithWorkers(0) keeps the default")
	require.NoError(t, opt.Configure(&c, []Option{WithWorkers(5)}, ErrInvalidOption))
	assert.Equal(t, 5, c.workers)
}

func TestFreeOfMemoryUnregisteredBehindItsBack(t *testing.T) {
	maps := countMappings(t)
	f := cudarttest.NewFakeT(t)
	r, err := Alloc(f, 0, 1<<20)
	require.NoError(t, err)
	require.NoError(t, f.HostUnregister(0, r.Bytes()))
	err = r.Free()
	require.ErrorIs(t, err, ErrNotRegistered, "Free says what CUDA said")
	require.ErrorIs(t, err, cudart.ErrHostMemoryNotRegistered)
	assert.Nil(t, r.Bytes(), "and frees the region all the same")
	require.NoError(t, r.Free())
	requireNothingPinned(t, f, maps)
}
