package pinned

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// Runtimes with fewer abilities than the fake, to exercise the type
// assertions.
type (
	baseOnly   struct{ cudart.Runtime }
	noRegister struct {
		cudart.Runtime
		cudart.HostAllocator
	}
	noAllocator struct {
		cudart.Runtime
		cudart.HostRegisterer
	}
)

func TestFallbackOnMissingAbilities(t *testing.T) {
	type build func(f *cudarttest.Fake) cudart.Runtime
	base := func(f *cudarttest.Fake) cudart.Runtime { return baseOnly{f} }
	noReg := func(f *cudarttest.Fake) cudart.Runtime { return noRegister{f, f} }
	noAlloc := func(f *cudarttest.Fake) cudart.Runtime { return noAllocator{f, f} }
	for name, c := range map[string]struct {
		rt       build
		method   Method
		flags    Flags
		fallback bool
		want     Method // when no error
		wantCall string // a call the fake must have seen
		wantErr  error
	}{
		"base runtime falls back to cudaMallocHost": {base, MethodRegister, 0, true, MethodHostAlloc, "cudaMallocHost", nil},
		"base runtime without fallback":             {base, MethodRegister, 0, false, 0, "", ErrUnsupported},
		"base runtime cannot map":                   {base, MethodHostAlloc, Mapped, true, 0, "", ErrUnsupported},
		"base runtime HostAlloc is cudaMallocHost":  {base, MethodHostAlloc, 0, true, MethodHostAlloc, "cudaMallocHost", nil},
		"no registerer falls back to cudaHostAlloc": {noReg, MethodRegisterNoHugePages, Mapped, true, MethodHostAlloc, "cudaHostAlloc", nil},
		"no allocator registers unmapped memory":    {noAlloc, MethodRegister, Portable, true, MethodRegister, "cudaHostRegister", nil},
		"no allocator cannot map, even by fallback": {noAlloc, MethodRegister, Mapped, true, 0, "", ErrUnsupported},
		"WriteCombined falls back to cudaHostAlloc": {func(f *cudarttest.Fake) cudart.Runtime { return f }, MethodRegister, WriteCombined, true, MethodHostAlloc, "cudaHostAlloc", nil},
		"WriteCombined without fallback is refused": {func(f *cudarttest.Fake) cudart.Runtime { return f }, MethodRegister, WriteCombined, false, 0, "", ErrUnsupported},
	} {
		t.Run(name, func(t *testing.T) {
			maps := countMappings(t)
			f := cudarttest.NewFakeT(t)
			r, err := Alloc(c.rt(f), 0, 1<<20, WithMethod(c.method), WithFlags(c.flags), WithFallback(c.fallback))
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
				requireNothingPinned(t, f, maps)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, r.Method())
			assert.Contains(t, f.Calls(), c.wantCall)
			require.NoError(t, r.Free())
			requireNothingPinned(t, f, maps)
		})
	}
}

func TestFallbackWhenRegistrationIsRefused(t *testing.T) {
	maps := countMappings(t)
	f := cudarttest.NewFakeT(t)
	core, logs := observer.New(zapcore.InfoLevel)
	require.NoError(t, f.FailCall("cudaHostRegister", 801))
	r, err := Alloc(f, 0, 1<<20, WithLogger(zap.New(core)))
	require.NoError(t, err)
	assert.Equal(t, MethodHostAlloc, r.Method())
	require.Equal(t, 1, logs.FilterMessage("pinned: falling back to MethodHostAlloc").FilterLevelExact(zapcore.WarnLevel).Len(), logs.All())
	require.NoError(t, r.Free())
	requireNothingPinned(t, f, maps)

	_, err = Alloc(f, 0, 1<<20, WithFallback(false))
	require.ErrorIs(t, err, cudart.ErrNotSupported)
	requireNothingPinned(t, f, maps)
}

func TestFallbackFailingTooReportsBoth(t *testing.T) {
	maps := countMappings(t)
	f := cudarttest.NewFakeT(t)
	require.NoError(t, f.FailCall("cudaHostRegister", 801))
	require.NoError(t, f.FailCall("cudaHostAlloc", 2))
	_, err := Alloc(f, 0, 1<<20)
	require.ErrorIs(t, err, cudart.ErrNotSupported)
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Contains(t, err.Error(), "fallback to MethodHostAlloc failed too")
	requireNothingPinned(t, f, maps)
}

func TestFallbackWhenMmapFails(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	orig := mapAnon
	t.Cleanup(func() { mapAnon = orig })
	mapAnon = func(uint64) ([]byte, error) { return nil, syscall.ENOMEM }
	r, err := Alloc(f, 0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, MethodHostAlloc, r.Method())
	require.NoError(t, r.Free())

	_, err = Alloc(f, 0, 1<<20, WithFallback(false))
	require.True(t, errors.Is(err, syscall.ENOMEM), err)
	requireNothingPinned(t, f, nil)
}
