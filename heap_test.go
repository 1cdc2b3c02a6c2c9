package cudapool_test

import (
	"encoding/binary"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// heapPTX holds heap(u32 *out, u64 size): *out = 1 when device-side
// malloc(size) succeeds, 0 when it returns NULL.
const heapPTX = `
.version 8.0
.target sm_80
.address_size 64

.extern .func (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;

.extern .func free
(
	.param .b64 free_param_0
)
;

.visible .entry heap(.param .u64 heap_out, .param .u64 heap_size)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [heap_out];
	ld.param.u64 %rd2, [heap_size];
	cvta.to.global.u64 %rd1, %rd1;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 retval0;
	call.uni (retval0), malloc, (param0);
	ld.param.b64 %rd3, [retval0];
	}
	setp.eq.s64 %p1, %rd3, 0;
	selp.u32 %r1, 0, 1, %p1;
	st.global.u32 [%rd1], %r1;
	@%p1 bra HEAP_DONE;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd3;
	call.uni free, (param0);
	}
HEAP_DONE:
	ret;
}
`

// defaultHeapChild marks the child process that runs a malloc kernel with
// CUDA's default heap: once such a kernel has run, the heap of its context
// can no longer grow, so the parent could not then try WithMallocHeap.
const defaultHeapChild = "CUDAPOOL_DEFAULT_HEAP_CHILD"

// deviceMalloc runs heap(size) on a pool's device buffer and reports
// whether the kernel's malloc succeeded.
func deviceMalloc(t *testing.T, rt cudart.Full, p *pool.Pool, size uint64) bool {
	t.Helper()
	if f, ok := rt.(*cudarttest.Fake); ok {
		f.RegisterKernel("heap", func(k *cudarttest.KernelContext) error {
			got := uint32(0)
			if q := k.Malloc(k.Uint64(1)); q != 0 {
				got = 1
				k.Free(q)
			}
			k.Write(k.Ptr(0), binary.LittleEndian.AppendUint32(nil, got))
			return nil
		})
	}
	fn := pooltest.Kernel(t, rt, 0, heapPTX, "heap")
	out := pooltest.Device(t, p, 4, pool.Name("heap.out"))
	require.NoError(t, p.Satisfy())
	ptr := pooltest.Ptr(t, out)
	require.NoError(t, rt.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(ptr), cudart.Arg(size)))
	require.NoError(t, rt.DeviceSynchronize(0))
	b := make([]byte, 4)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(ptr, 4), cudart.DeviceToHost))
	return binary.LittleEndian.Uint32(b) == 1
}

// runChild runs test alone in a child process of the test binary, with
// marker set in its environment, and fails t with its output unless it
// passes. The child does not annotate: compute-sanitizer 2025.3's NVTX
// library crashed inside nvtxMemHeapRegister when a child process of the
// sanitized test loaded it.
func runChild(t *testing.T, test, marker, what string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	child.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NVTX_INJECTION64_PATH=")
	}), marker+"=1")
	out, err := child.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", what, out)
	t.Logf("%s passed:\n%s", what, out)
}

func newHeapPool(t *testing.T, rt cudart.Full, opts ...pool.Option) *pool.Pool {
	t.Helper()
	return pooltest.New(t, rt, append([]pool.Option{pool.WithDeviceBytes(4 << 20), pool.WithHostBytes(1 << 20), pool.WithHostPinning(pinned.MethodHostAlloc)}, opts...)...)
}

// A kernel's malloc of 16 MiB gets NULL from CUDA's default 8 MiB heap and
// succeeds once the pool was created WithMallocHeap.
func TestDeviceMallocHeap(t *testing.T) {
	if os.Getenv(defaultHeapChild) != "" {
		lib, err := cudart.Open()
		require.NoError(t, err)
		// Registered first, so it runs after the pool's Close.
		t.Cleanup(func() { assert.NoError(t, lib.Close()) })
		assert.False(t, deviceMalloc(t, lib, newHeapPool(t, lib), 16<<20), "16 MiB is beyond the default heap")
		return
	}
	forEachRuntime(t, func(t *testing.T, rt cudart.Full) {
		if _, ok := rt.(*cudarttest.Fake); ok {
			fresh := cudarttest.NewFakeT(t)
			assert.False(t, deviceMalloc(t, fresh, newHeapPool(t, fresh), 16<<20), "16 MiB is beyond the default heap")
		} else {
			runChild(t, "TestDeviceMallocHeap", defaultHeapChild, "the default-heap child")
		}
		p := newHeapPool(t, rt, pool.WithMallocHeap(64<<20))
		assert.GreaterOrEqual(t, p.MallocHeap(), uint64(64<<20))
		assert.True(t, deviceMalloc(t, rt, p, 16<<20), "16 MiB fits the 64 MiB heap")
	})
}
