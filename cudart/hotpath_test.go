package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertHotPathAllocatesNothing checks that the calls a pool makes per buffer,
// and those examples/callcost times, allocate nothing in Go on l.
func assertHotPathAllocatesNothing(t *testing.T, l *Lib) {
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
	for name, f := range cases {
		assert.Zero(t, testing.AllocsPerRun(50, f), name)
	}
}
