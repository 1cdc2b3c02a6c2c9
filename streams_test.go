package cudapool_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// spinPTX holds spin(u64 cycles): one thread that busy-waits for that many
// clock cycles, a kernel that is still running long after it was launched.
const spinPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry spin(.param .u64 cycles)
{
	.reg .pred %p;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [cycles];
	mov.u64 %rd2, %clock64;
$L_spin:
	mov.u64 %rd3, %clock64;
	sub.s64 %rd4, %rd3, %rd2;
	setp.lt.u64 %p, %rd4, %rd1;
	@%p bra $L_spin;
	ret;
}
`

// spinCycles is about 1.5 s on a 2 GHz GPU: far longer than a release that
// does not wait for it.
const spinCycles = 3_000_000_000

// Two models served by one process: each pool waits only for its own stream,
// so pool A releases while pool B's kernel still runs.
func TestTwoPoolsOnOneDeviceReleaseIndependently(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		if f, ok := rt.(*cudarttest.Fake); ok {
			f.RegisterKernel("spin", func(*cudarttest.KernelContext) error { return nil })
		}
		sa, sb := pooltest.Stream(t, rt, 0), pooltest.Stream(t, rt, 0)
		opts := []pool.Option{pool.WithDeviceBytes(64 << 20), pool.WithHostBytes(1 << 20), pool.WithHostPinning(pinned.MethodHostAlloc)}
		a := pooltest.New(t, rt, append(opts, pool.WithStreams(sa))...)
		b := pooltest.New(t, rt, opts...)
		require.NoError(t, b.UseStreams(sb))

		spin := pooltest.Kernel(t, rt, 0, spinPTX, "spin")
		done, err := rt.EventCreate(0)
		require.NoError(t, err)
		defer func() { assert.NoError(t, rt.EventDestroy(0, done)) }()

		for _, p := range []*pool.Pool{a, b} {
			pooltest.Device(t, p, 1<<20)
			require.NoError(t, p.Commit())
		}
		start := time.Now()
		require.NoError(t, rt.LaunchKernel(0, spin, cudart.Dim1(1), cudart.Dim1(1), 0, sb, cudart.Arg[uint64](spinCycles)))
		require.NoError(t, rt.EventRecord(0, done, sb))
		require.NoError(t, a.ReleaseAll())
		releasedA := time.Since(start)
		finished, err := rt.EventQuery(0, done)
		require.NoError(t, err)
		assert.False(t, finished, "pool A's ReleaseAll returned before pool B's kernel finished")
		require.NoError(t, b.ReleaseAll())
		releasedB := time.Since(start)
		finished, err = rt.EventQuery(0, done)
		require.NoError(t, err)
		assert.True(t, finished, "pool B's ReleaseAll waited for its stream")
		t.Logf("after the launch on B's stream: A released in %v, B in %v", releasedA, releasedB)
	}, cudarttest.WithHostMemory(1<<30))
}
