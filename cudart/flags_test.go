package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The enums print as CUDA names them, and a value CUDA does not name as its
// type and number.
func TestEnumNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{HostToDevice.String(), "cudaMemcpyHostToDevice"},
		{Default.String(), "cudaMemcpyDefault"},
		{MemcpyKind(9).String(), "cudaMemcpyKind(9)"},
		{MemcpyKind(-1).String(), "cudaMemcpyKind(-1)"},
		{CaptureModeThreadLocal.String(), "cudaStreamCaptureModeThreadLocal"},
		{limits.Name(LimitMallocHeapSize), "cudaLimitMallocHeapSize"},
		{limits.Name(Limit(3)), "cudaLimit(3)"},
		{MemoryUnregistered.String(), "cudaMemoryTypeUnregistered"},
		{MemoryManaged.String(), "cudaMemoryTypeManaged"},
		{MemoryType(4).String(), "cudaMemoryType(4)"},
		{GraphNodeConditional.String(), "cudaGraphNodeTypeConditional"},
	} {
		assert.Equal(t, c.want, c.got)
	}
}
