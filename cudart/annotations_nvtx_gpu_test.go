package cudart

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPUNVTXProbe writes one byte past a 4 KiB region annotated inside a
// 64 KiB cudaMalloc heap. Under compute-sanitizer --tool memcheck, with
// CUDAPOOL_NVTX_PROBE=1, the sanitizer reports the write: it heard the
// annotations. Without them the write is inside the cudaMalloc and nothing
// is reported. Run plainly, on a host with a GPU and compute-sanitizer, the
// test runs itself so and checks the report, and that the tool refused no
// annotation.
func TestGPUNVTXProbe(t *testing.T) {
	if os.Getenv("CUDAPOOL_NVTX_PROBE") != "1" {
		sanitizeProbe(t)
		return
	}
	l := gpuDriver(t)
	const heapSize, regionSize = 64 << 10, 4 << 10
	p, err := l.Malloc(0, heapSize)
	require.NoError(t, err)
	// compute-sanitizer wants the CUDA runtime initialised before the
	// first NVTX call, which asking whether annotations are on is.
	t.Logf("%s=%q, annotations enabled: %v", injectionEnv(), os.Getenv(injectionEnv()), l.AnnotationsEnabled(0))
	// A sanitizer's report ends the kernel with a sticky error, which the
	// clean-up then meets: it is logged, not failed.
	defer func() { t.Logf("free: %v", l.Free(0, p)) }()
	h, err := l.MemHeapRegister(0, p, heapSize, "probe heap")
	require.NoError(t, err)
	defer func() { t.Logf("heap unregister: %v", l.MemHeapUnregister(h)) }()
	require.NoError(t, l.MemRegionsRegister(h, []MemRegion{{Addr: p, Size: regionSize, Name: "probe buffer"}}))

	m, err := l.ModuleLoadData(0, probePTX)
	require.NoError(t, err)
	defer func() { t.Logf("unload: %v", l.ModuleUnload(0, m)) }()
	poke, err := l.ModuleGetFunction(0, m, "poke")
	require.NoError(t, err)
	require.NoError(t, l.LaunchKernel(0, poke, Dim1(1), Dim1(1), 0, 0, Arg(p.Add(regionSize))))
	t.Logf("wrote 1 byte at %s, %d bytes into the heap at %s; synchronize: %v", p.Add(regionSize), regionSize, p, l.DeviceSynchronize(0))
}

// probePTX stores 7 at the byte p points at.
const probePTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry poke(.param .u64 poke_p)
{
	.reg .b16 %rs<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [poke_p];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u16 %rs1, 7;
	st.global.u8 [%rd2], %rs1;
	ret;
}
`

// sanitizeProbe runs TestGPUNVTXProbe in a child process of the test binary
// under compute-sanitizer, and checks its report.
func sanitizeProbe(t *testing.T) {
	gpuDriver(t)
	tool, err := exec.LookPath("compute-sanitizer")
	if err != nil {
		tool = "/usr/local/cuda/bin/compute-sanitizer"
		if _, statErr := os.Stat(tool); statErr != nil {
			t.Skipf("no compute-sanitizer to run the probe under: %v; %v", err, statErr)
		}
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(tool, "--tool", "memcheck", exe, "-test.run", "^TestGPUNVTXProbe$", "-test.v")
	cmd.Env = append(os.Environ(), "CUDAPOOL_NVTX_PROBE=1")
	// The child passes whatever the tool finds: the report is the result.
	out, err := cmd.CombinedOutput()
	t.Logf("%s\n%s", cmd, out)
	require.NoError(t, err)
	assert.Contains(t, string(out), "Invalid __global__ write of size 1")
	assert.NotContains(t, string(out), "Warning: Call to nvtx", "the tool refused an annotation")
}
