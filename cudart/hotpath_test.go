package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertHotPathAllocatesNothing checks that the calls a pool makes per buffer,
// and those examples/callcost times, allocate nothing in Go on l.
func assertHotPathAllocatesNothing(t *testing.T, l *library) {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so allocations cannot be counted")
	}
	host := make([]byte, 4096)
	dev, err := l.Malloc(0, 8192)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Free(0, dev)) }()
	cases := map[string]func(){
		"Malloc+Free": func() {
			p, _ := l.Malloc(0, 1<<20)
			_ = l.Free(0, p)
		},
		"MemGetInfo": func() { _, _, _ = l.MemGetInfo(0) },
		"Memcpy": func() {
			_ = l.Memcpy(0, DeviceMem(dev, 4096), HostMem(host), HostToDevice)
			_ = l.Memcpy(0, HostMem(host), DeviceMem(dev, 4096), DeviceToHost)
			_ = l.Memcpy(0, DeviceMem(dev.Add(4096), 4), DeviceMem(dev, 4), DeviceToDevice)
		},
		"Memset": func() { _ = l.Memset(0, dev, 1, 4096) },
		"MallocAsync+FreeAsync": func() {
			p, _ := l.MallocAsync(0, 1<<20, 0)
			_ = l.FreeAsync(0, p, 0)
		},
		"MemcpyAsync": func() {
			_ = l.MemcpyAsync(0, DeviceMem(dev, 4096), HostMem(host), HostToDevice, 0)
		},
	}
	if fill, ok := hotPathKernel(t, l); ok {
		cases["LaunchKernel"] = func() {
			_ = l.LaunchKernel(0, fill, Dim1(1), Dim1(256), 0, 0, Arg(dev), Arg[uint32](1024), Arg[uint32](7))
		}
	}
	for name, f := range cases {
		assert.Zero(t, testing.AllocsPerRun(50, f), name)
	}
}

// hotPathKernel loads the fill kernel of testPTX where the library has it:
// fakecuda.c and a GPU, not the recorder.
func hotPathKernel(t *testing.T, l *library) (Function, bool) {
	t.Helper()
	m, err := l.ModuleLoadData(0, hotPathPTX)
	if err != nil {
		t.Logf("no kernel to launch: %v", err)
		return 0, false
	}
	t.Cleanup(func() { assert.NoError(t, l.ModuleUnload(0, m)) })
	fill, err := l.ModuleGetFunction(0, m, "fill")
	require.NoError(t, err)
	return fill, true
}

// hotPathPTX is a fill kernel that does nothing: the launch is what counts.
const hotPathPTX = `
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 fill_p, .param .u32 fill_n, .param .u32 fill_value)
{
	ret;
}
`
