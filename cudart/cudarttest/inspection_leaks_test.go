package cudarttest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/record"
	"github.com/cudapool/cudapool/internal/check/require"
)

func TestNewFakeTFailsTheTestOnLeaks(t *testing.T) {
	rec := &record.TB{}
	f := cudarttest.NewFakeT(rec)
	p, err := f.Malloc(0, 1536)
	require.NoError(t, err)
	rec.RunCleanups()
	assert.Empty(t, rec.Fatals)
	require.Len(t, rec.Errors, 1)
	assert.Contains(t, rec.Errors[0], "device memory "+p.String()+" (1.5 KiB) from cudaMalloc (call #1)")

	rec = &record.TB{}
	f = cudarttest.NewFakeT(rec)
	p, err = f.Malloc(0, 1536)
	require.NoError(t, err)
	require.NoError(t, f.Free(0, p))
	rec.RunCleanups()
	assert.Empty(t, rec.Errors, "nothing leaked, nothing reported")
	assert.Empty(t, rec.Fatals)
}

func TestCheckLeaksListsEveryKindInCallOrder(t *testing.T) {
	f := cudarttest.NewFake()
	_, err := f.Malloc(0, 2*kib)
	require.NoError(t, err)
	_, err = f.HostAlloc(0, 4*kib, cudart.HostAllocMapped)
	require.NoError(t, err)
	reg := make([]byte, 4*kib)
	require.NoError(t, f.HostRegister(0, reg, cudart.HostRegisterDefault))
	_, err = f.MallocManaged(0, kib, cudart.MemAttachGlobal)
	require.NoError(t, err)
	_, err = f.MallocAsync(0, kib, 0)
	require.NoError(t, err)
	_, err = f.StreamCreate(0)
	require.NoError(t, err)
	h, err := f.MemCreate(0, g)
	require.NoError(t, err)
	va, err := f.MemAddressReserve(g, 0, 0)
	require.NoError(t, err)
	require.NoError(t, f.MemMap(va, g, 0, h))
	require.NoError(t, f.MemRelease(h))

	err = f.CheckLeaks()
	require.ErrorIs(t, err, cudarttest.ErrLeaked)
	msg := err.Error()
	want := []string{
		"9 still live",
		"device memory 0x2", "(2.0 KiB) from cudaMalloc (call #1)",
		"pinned host memory (cudaHostAllocMapped)", "from cudaHostAlloc (call #2)",
		"registered host memory (cudaHostRegisterDefault)", "from cudaHostRegister (call #3)",
		"managed memory", "from cudaMallocManaged (call #4)",
		"stream-ordered memory", "from cudaMallocAsync (call #5)",
		"stream 0x", "from cudaStreamCreate (call #6)",
		"physical memory handle", "released but still mapped",
		"virtual address reservation", "from cuMemAddressReserve (call #8)",
		"mapping " + va.String() + " (2.0 MiB of handle", "from cuMemMap (call #9)",
	}
	for _, w := range want {
		assert.Contains(t, msg, w)
	}
	last := -1
	for i := 1; i <= 9; i++ {
		at := strings.Index(msg, fmt.Sprintf("(call #%d)", i))
		assert.Greater(t, at, last, "call #%d is listed in order", i)
		last = at
	}
	u := f.Live()
	assert.Equal(t, cudarttest.Usage{
		DeviceAllocs: 1, DeviceBytes: 2 * kib,
		HostAllocs: 1, HostBytes: 4 * kib, MappedHostAllocs: 1, MappedHostBytes: 4 * kib,
		RegisteredAllocs: 1, RegisteredBytes: 4 * kib,
		ManagedAllocs: 1, ManagedBytes: kib,
		AsyncAllocs: 1, AsyncBytes: kib,
		PhysAllocs: 1, PhysBytes: g,
		Reservations: 1, ReservedBytes: g,
		Mappings: 1, MappedBytes: g,
		Streams: 1,
	}, u)
}
