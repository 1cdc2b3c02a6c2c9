package cudart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGraphNodeTypeString(t *testing.T) {
	for typ, want := range map[GraphNodeType]string{
		GraphNodeKernel:      "cudaGraphNodeTypeKernel",
		GraphNodeMemAlloc:    "cudaGraphNodeTypeMemAlloc",
		GraphNodeMemFree:     "cudaGraphNodeTypeMemFree",
		GraphNodeConditional: "cudaGraphNodeTypeConditional",
		12:                   "cudaGraphNodeType(12)",
		14:                   "cudaGraphNodeType(14)",
		-1:                   "cudaGraphNodeType(-1)",
	} {
		assert.Equal(t, want, typ.String())
	}
}

func TestGraphNodeCounts(t *testing.T) {
	c := GraphNodeCounts{GraphNodeMemFree: 3, GraphNodeKernel: 6, GraphNodeMemAlloc: 3, 14: 1, GraphNodeHost: 0}
	assert.Equal(t, "cudaGraphNodeTypeKernel=6 cudaGraphNodeTypeMemAlloc=3 cudaGraphNodeTypeMemFree=3 cudaGraphNodeType(14)=1", c.String(), "in type order, zeros left out")
	assert.Equal(t, 6, c.Memory())
	assert.Equal(t, 13, c.Total())
	assert.Equal(t, "no nodes", GraphNodeCounts{}.String())
	assert.Zero(t, GraphNodeCounts{GraphNodeKernel: 2}.Memory())
}
