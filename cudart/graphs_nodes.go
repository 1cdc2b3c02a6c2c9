package cudart

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/internal/enum"
)

// GraphNode is a cudaGraphNode_t: one node of a Graph, valid while the
// graph is.
type GraphNode uintptr

// GraphNodeType is cudaGraphNodeType: what a node of a graph does.
type GraphNodeType int

// The values of cudaGraphNodeType, as CUDA 13's driver_types.h numbers them
// (12 is the driver's batched memory operation, which the runtime does not
// name).
const (
	GraphNodeKernel             GraphNodeType = 0
	GraphNodeMemcpy             GraphNodeType = 1
	GraphNodeMemset             GraphNodeType = 2
	GraphNodeHost               GraphNodeType = 3
	GraphNodeGraph              GraphNodeType = 4 // a child graph
	GraphNodeEmpty              GraphNodeType = 5
	GraphNodeWaitEvent          GraphNodeType = 6
	GraphNodeEventRecord        GraphNodeType = 7
	GraphNodeExtSemaphoreSignal GraphNodeType = 8
	GraphNodeExtSemaphoreWait   GraphNodeType = 9
	GraphNodeMemAlloc           GraphNodeType = 10 // cudaMallocAsync captured, or added
	GraphNodeMemFree            GraphNodeType = 11 // cudaFreeAsync captured, or added
	GraphNodeConditional        GraphNodeType = 13
)

// String returns the CUDA name of t, e.g. "cudaGraphNodeTypeKernel".
func (t GraphNodeType) String() string { return graphNodeTypes.Name(t) }

var graphNodeTypes = enum.Table[GraphNodeType]{Prefix: "cudaGraphNodeType", Names: []string{"Kernel", "Memcpy", "Memset", "Host", "Graph", "Empty",
	"WaitEvent", "EventRecord", "ExtSemaphoreSignal", "ExtSemaphoreWait", "MemAlloc", "MemFree", "", "Conditional"}, Unknown: "cudaGraphNodeType(%d)"}

// GraphNodeCounts are a graph's nodes counted by type; a type with no node
// is absent.
type GraphNodeCounts map[GraphNodeType]int

// Memory is the number of memory allocation and free nodes: 0 for a graph
// that allocates no memory of its own when it runs.
func (c GraphNodeCounts) Memory() int { return c[GraphNodeMemAlloc] + c[GraphNodeMemFree] }

// Total is the number of nodes.
func (c GraphNodeCounts) Total() int {
	n := 0
	for _, k := range c {
		n += k
	}
	return n
}

// String lists the counts in type order, e.g. "cudaGraphNodeTypeKernel=6
// cudaGraphNodeTypeMemAlloc=3"; "no nodes" for an empty graph.
func (c GraphNodeCounts) String() string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(c)) {
		if c[t] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", t, c[t]))
		}
	}
	if len(parts) == 0 {
		return "no nodes"
	}
	return strings.Join(parts, " ")
}

// CountGraphNodes counts the nodes of graph by type, through GraphNodes and
// GraphNodeType: a test asserts, say, that a request's graph holds no memory
// node with CountGraphNodes(...).Memory() == 0.
func CountGraphNodes(g Graphs, device int, graph Graph) (GraphNodeCounts, error) {
	types, err := GraphNodeTypes(g, device, graph)
	if err != nil {
		return nil, err
	}
	counts := GraphNodeCounts{}
	for _, t := range types {
		counts[t]++
	}
	return counts, nil
}

// GraphNodeTypes is the type of each node of graph, in the order GraphNodes
// gives them (cudaGraphGetNodes, which CUDA does not document; in creation
// order on the fake).
func GraphNodeTypes(g Graphs, device int, graph Graph) ([]GraphNodeType, error) {
	nodes, err := g.GraphNodes(device, graph)
	if err != nil {
		return nil, err
	}
	types := make([]GraphNodeType, len(nodes))
	for i, n := range nodes {
		if types[i], err = g.GraphNodeType(device, n); err != nil {
			return nil, fmt.Errorf("%w (the type of node %d of %d of graph 0x%x)", err, i, len(nodes), uintptr(graph))
		}
	}
	return types, nil
}
