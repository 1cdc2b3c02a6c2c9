// Command gemm times cuBLAS GEMMs through package cublas, on pool memory,
// and compares them with the same calls made from C.
//
//	go run ./examples/gemm [-runtime=auto|cuda|fake] [-reps 50] [-trials 7] [-warmup 10] [-scale 1] [-graph] [-machine] [-compare FILE]
//
// The shapes: 4096×4096×4096 in FP32, FP16 and BF16 (inputs and output of
// that type, FP32 accumulation), then each layer of a multi-layer
// perceptron, 1024 → 4096 → 4096 → 1024, at batch 1, 8 and 32, in FP32.
// Every GEMM is C = A·B, column-major, NoTrans both, α 1 and β 0: A is M×K,
// B K×N, C M×N, with leading dimensions M, K and M. A layer is its weights
// as A (M = the layer's outputs, K its inputs) times the batch's
// activations as B (K×N, a column per request, N = the batch): l1.b8 is the
// first layer at batch 8, M 4096, N 8, K 1024.
//
// One stream, one handle on it (NewHandle: cublasCreate, cublasSetStream,
// cublasSetMathMode(CUBLAS_DEFAULT_MATH), so no TF32), its workspace a
// 32 MiB pool buffer, and A, B and C pool buffers sized for the largest
// shape. For each shape: A and B filled with a fixed sequence of values and
// copied in, -warmup GEMMs and a stream synchronisation, then -trials times
// -reps GEMMs between two events recorded on the stream. A row gives the
// median and fastest trial's GPU ms per GEMM, the median's TFLOP/s, and the
// host's microseconds per call while queueing. After the trials, outside
// the timing, 256 elements of the last GEMM's result are compared with the
// CPU's, to the tolerance package cublas documents; a mismatch is an error.
//
// With -graph, a shape's -reps GEMMs are captured once in a CUDA graph
// (CaptureModeThreadLocal), launched once untimed, and each trial is one
// launch of it between the events: the host's calls leave the timing, and
// what remains is the GPU's cost of the GEMMs as the binding set them up.
// The tool prints the graphs' memory nodes (none while the workspace is
// set) and kernel nodes a GEMM.
//
// # The C reference
//
// cref/gemm.c makes the same calls from C, with the same values, timing and
// table: cublasCreate, cublasSetStream, cublasSetMathMode, cublasSetWorkspace
// with 32 MiB from cudaMalloc, and cublasGemmEx with the same types,
// CUBLAS_COMPUTE_32F and CUBLAS_GEMM_DEFAULT. After its table it prints each
// row as a "gemm:" line, as this tool does with -machine. -compare FILE
// reads those lines and prints, per shape, the ratio of this run's median to
// C's, whether it is within 2%, and both programs' host microseconds per
// call. A row is marked host-bound when queueing a call takes the host at
// least 90% of the GEMM's GPU time: there the GPU may wait for the calls, and
// the events time the host's cost as well as the GPU's.
//
// On a GPU host with the CUDA toolkit (nvcc, cuBLAS 12 or 13), from the
// repository root, with .gpu built by make gpu, run both in one session, C
// first:
//
//	export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
//	/usr/local/cuda/bin/nvcc -O2 -o /tmp/gemm_c examples/gemm/cref/gemm.c -lcublas
//	/tmp/gemm_c > c.txt
//	.gpu/gemm -runtime cuda -compare c.txt
//	/tmp/gemm_c -graph > cg.txt
//	.gpu/gemm -runtime cuda -graph -compare cg.txt
//
// Give both the same -reps, -trials, -warmup, -scale and -graph: -compare
// compares only rows of the same calls. make gpu does not build the C
// program: it needs the toolkit's headers.
//
// On the fake runtime the GEMMs run on the CPU and the events count the
// calls made between them (none while the GEMMs run, so 0 ms): the defaults
// shrink to dimensions divided by 32, 2 reps, 3 trials and 1 warm-up call,
// and the times are no GPU's.
package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

// about is what -h prints before the flags.
const about = `gemm times cuBLAS GEMMs through package cublas on pool memory, with a
32 MiB pool workspace, between two events on one stream: 4096x4096x4096 in
FP32, FP16 and BF16, and the MLP's layers (1024 -> 4096 -> 4096 -> 1024) at
batch 1, 8 and 32 in FP32, each checked against the CPU after its timing.
-graph times one launch of a CUDA graph of the GEMMs instead. -compare reads the output of cref/gemm.c, the same calls made from C, and
prints the ratio Go/C per shape. On the fake runtime the shapes shrink and
the times are no GPU's.`

// config is what the flags ask for.
type config struct {
	runtime string
	timing
	scale   int
	machine bool
	compare string
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("gemm", about, stderr)
	var c config
	cmd.RuntimeVar(&c.runtime)
	cmd.IntVar(&c.reps, "reps", 50, "GEMMs a trial, between its two events (2 on the fake unless given)")
	cli.Fake(cmd, "reps", &c.reps, 2)
	cmd.IntVar(&c.trials, "trials", 7, "timed trials a shape; the median and the fastest are reported (3 on the fake unless given)")
	cli.Fake(cmd, "trials", &c.trials, 3)
	cmd.IntVar(&c.warmup, "warmup", 10, "untimed GEMMs a shape before its trials (1 on the fake unless given)")
	cli.Fake(cmd, "warmup", &c.warmup, 1)
	cmd.IntVar(&c.scale, "scale", 1, "divide every dimension but the batch by this (32 on the fake unless given)")
	cli.Fake(cmd, "scale", &c.scale, 32)
	cmd.BoolVar(&c.graph, "graph", false, "capture each trial's GEMMs in a CUDA graph and launch it once, so that the host's calls are out of the timing")
	cmd.BoolVar(&c.machine, "machine", false, `also print each row as a "gemm:" line, as cref/gemm.c does`)
	cmd.StringVar(&c.compare, "compare", "", "a file of cref/gemm.c's output: print the ratio Go/C per shape")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if c.reps < 1 || c.trials < 1 || c.warmup < 0 || c.scale < 1 {
		fmt.Fprintf(stderr, "gemm: -reps (%d), -trials (%d) and -scale (%d) must be at least 1, -warmup (%d) at least 0\n", c.reps, c.trials, c.scale, c.warmup)
		return 2
	}
	rt, err := choose.Open(c.runtime)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	return cmd.Run(rt, stdout, func() error { return measure(rt, c, stdout, stderr) })
}

// measure times every shape, prints the table and, as asked, the machine
// lines and the comparison.
func measure(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
	lib, err := cublas.Open(rt)
	if err != nil {
		return err
	}
	v, err := lib.Version()
	if err != nil {
		return err
	}
	version := v.String()
	fmt.Fprintf(stdout, "cuBLAS %s (%s)\n", version, lib.Path())
	list := shapes(c.scale)
	b, err := newBench(rt, lib, list)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	fmt.Fprintf(stdout, "workspace %d MiB from the pool; A is M x K, B K x N, C M x N, column-major, NoTrans both, FP32 accumulation\n\n", workspace>>20)
	printLaunch(stdout, c.timing)
	printHeader(stdout)
	results := make([]result, 0, len(list))
	for _, s := range list {
		r, err := b.run(s, c.timing, stderr)
		if err != nil {
			return err
		}
		printRow(stdout, r)
		results = append(results, r)
	}
	fmt.Fprintln(stdout)
	if c.graph {
		printNodes(stdout, results)
	}
	fmt.Fprintf(stdout, "every shape's last GEMM checked against the CPU: %d elements each, within package cublas's documented tolerance\n", samples)
	if c.machine {
		fmt.Fprintf(stdout, versionFormat, v.Major, v.Minor, v.Patch)
		for _, r := range results {
			printMachine(stdout, r)
		}
	}
	if c.compare != "" {
		if err := compare(stdout, c.compare, version, results); err != nil {
			return err
		}
	}
	if !rt.CUDA {
		fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
	}
	return nil
}
