package cudart

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/ptx"
	"github.com/cudapool/cudapool/cudart/internal/ptxcases"
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

// TestGPUJITRefusesTheTable gives each text of ptxcases to the driver's
// JIT itself, past ParsePTX, and asserts the JIT answers as the table says
// and as ParsePTX does: what the binding and the fake refuse before the
// JIT, the JIT refuses too, with the same code.
func TestGPUJITRefusesTheTable(t *testing.T) {
	l := gpuDriver(t)
	for _, c := range ptxcases.Cases {
		code, text := jit(t, l, c)
		assert.Equal(t, Code(c.Code), code, "%s: JIT log: %s", c.Name, text)
		_, err := ptx.Parse(c.PTX)
		if c.Code == ptxcases.Loads {
			assert.NoError(t, err, c.Name)
		} else {
			assert.Equal(t, Code(c.Code), Code(ptx.JITCode(err)), "%s: %v", c.Name, err)
		}
	}
}

// TestGPUJITAtTheEdges gives each text of ptxcases.Edges, not yet measured,
// to the driver's JIT and reports what it answers beside what ptx.Parse
// says, so that the table can take them once a GPU has answered.
func TestGPUJITAtTheEdges(t *testing.T) {
	l := gpuDriver(t)
	for _, c := range ptxcases.Edges {
		code, text := jit(t, l, c)
		_, err := ptx.Parse(c.PTX)
		t.Logf("%s: the JIT answers %d (ptx.Parse: %d, %v); JIT log: %s", c.Name, code, c.Code, err, text)
	}
}

// jit gives c's text to the driver's JIT itself, past ptx.Parse, and
// returns its answer and its log; a module it loads is unloaded.
func jit(t *testing.T, l *library, c ptxcases.Case) (Code, []byte) {
	image := append([]byte(c.PTX), 0)
	log := make([]byte, jitLogBytes)
	r := l.callMem(calls.CuModuleLoadDataEx, 0, [2]Mem{HostMem(image), HostMem(log)}, 2)
	text, _, _ := bytes.Cut(log, []byte{0})
	if r.code == 0 {
		require.Zero(t, l.call(calls.CuModuleUnload, 0, uintptr(r.a)).code, c.Name)
	}
	return r.code, bytes.TrimSpace(text)
}
