package main

import (
	"fmt"
	"io"
	"math"

	"github.com/cudapool/cudapool/cudart"
)

// The table's and the machine lines' formats, printed alike by
// cref/gemm.c, so that the two outputs compare line by line.
const (
	headerFormat  = "%-10s %-5s %6s %6s %6s %5s %6s %11s %11s %8s %12s\n"
	rowFormat     = "%-10s %-5s %6d %6d %6d %5d %6d %11.6f %11.6f %8.2f %12.2f\n"
	versionFormat = "gemm: cublas=%d.%d.%d\n"
	streamLine    = "launch: stream, each GEMM a cublasGemmEx call\n"
	graphLine     = "launch: graph, a trial's GEMMs captured in one CUDA graph, launched once\n"
	machineFormat = "gemm: shape=%s type=%s m=%d n=%d k=%d reps=%d trials=%d launch=%s ms=%.6f min_ms=%.6f tflops=%.2f host_us=%.2f\n"
)

// printHeader prints the table's header.
func printHeader(w io.Writer) {
	fmt.Fprintf(w, headerFormat, "shape", "type", "M", "N", "K", "reps", "trials", "ms/GEMM", "min ms", "TFLOP/s", "host us/call")
}

// printRow prints r as a row of the table.
func printRow(w io.Writer, r result) {
	fmt.Fprintf(w, rowFormat, r.name, typeName(r.t), r.m, r.n, r.k, r.reps, r.trials, r.ms, r.minMs, r.tflops(), r.hostUs)
}

// printMachine prints r as a "gemm:" line, which -compare reads.
func printMachine(w io.Writer, r result) {
	fmt.Fprintf(w, machineFormat, r.name, typeName(r.t), r.m, r.n, r.k, r.reps, r.trials, r.launchName(), r.ms, r.minMs, r.tflops(), r.hostUs)
}

// printLaunch prints how the trials launch their GEMMs.
func printLaunch(w io.Writer, tm timing) {
	if tm.graph {
		fmt.Fprint(w, graphLine)
		return
	}
	fmt.Fprint(w, streamLine)
}

// printNodes says what the graphs of a -graph run held: with the workspace
// set, cuBLAS allocates nothing, so no graph holds a memory node.
func printNodes(w io.Writer, results []result) {
	memory, lo, hi := 0, math.Inf(1), math.Inf(-1)
	for _, r := range results {
		memory += r.nodes.Memory()
		k := float64(r.nodes[cudart.GraphNodeKernel]) / float64(r.reps)
		lo, hi = min(lo, k), max(hi, k)
	}
	fmt.Fprintf(w, "graphs: %d memory nodes in all %d; %.4g to %.4g kernel nodes a GEMM\n", memory, len(results), lo, hi)
}
