package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// noNode is the node type of a captured step that adds no node to the
// graph.
const noNode cudart.GraphNodeType = -1

// nodeOf is the node CUDA's stream capture adds to the graph for call: a
// kernel node for a launch, a memcpy node for an async copy, a memset node
// for an async memset, memory allocation and free nodes for cudaMallocAsync
// and cudaFreeAsync, a child graph node for a graph launched into the
// capture. An event record or wait with default flags adds none: CUDA
// documents cudaEventRecordExternal and cudaEventWaitExternal as making a
// node "instead of the default behavior", which is an edge between the
// nodes of the capture. A prefetch adds none either: it changes no result,
// and the suite does not assert how CUDA records it.
func nodeOf(call calls.Call) cudart.GraphNodeType {
	if t, ok := nodeTypes[call]; ok {
		return t
	}
	return noNode
}

var nodeTypes = map[calls.Call]cudart.GraphNodeType{
	calls.CuLaunchKernel: cudart.GraphNodeKernel,
	calls.MemcpyAsync:    cudart.GraphNodeMemcpy,
	calls.MallocAsync:    cudart.GraphNodeMemAlloc,
	calls.MemsetAsync:    cudart.GraphNodeMemset,
	calls.FreeAsync:      cudart.GraphNodeMemFree,
	calls.GraphLaunch:    cudart.GraphNodeGraph,
}

// graphNode is a node of a graph: its graph and type.
type graphNode struct {
	graph cudart.Graph
	typ   cudart.GraphNodeType
}

// addNodes gives a handle to each step of work that has a node, for graph g.
func (c *captureState) addNodes(g cudart.Graph, work []step) []cudart.GraphNode {
	var nodes []cudart.GraphNode
	for _, st := range work {
		if st.node == noNode {
			continue
		}
		if c.nodes == nil {
			c.nodes = make(map[cudart.GraphNode]graphNode)
		}
		n := cudart.GraphNode(c.handle())
		c.nodes[n] = graphNode{g, st.node}
		nodes = append(nodes, n)
	}
	return nodes
}

// dropNodes forgets the nodes of a destroyed graph.
func (c *captureState) dropNodes(nodes []cudart.GraphNode) {
	for _, n := range nodes {
		delete(c.nodes, n)
	}
}
