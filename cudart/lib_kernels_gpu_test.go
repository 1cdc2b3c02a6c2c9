package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGPUModuleJITLog: PTX the driver cannot compile is an error wrapping
// ErrInvalidPTX that carries the JIT compiler's log.
func TestGPUModuleJITLog(t *testing.T) {
	l := gpuDriver(t)
	_, err := l.ModuleLoadData(0, ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry broken()\n{\n\tbogus.u32 %r1;\n\tret;\n}\n")
	assert.ErrorIs(t, err, ErrInvalidPTX)
	assert.ErrorContains(t, err, "cuModuleLoadDataEx(")
	assert.ErrorContains(t, err, "JIT log: ")
	t.Logf("%v", err)
}
