// Command pipeline is the program a user of cudapool writes: an inference
// chain planned once, captured as a CUDA graph, and replayed.
//
// Pinned staging buffers carry the input in and the output out; a chain of
// kernels runs over device buffers whose lifetimes (pool.Live) let
// activations that are never alive together share memory. The chain is
// captured from a stream into a CUDA graph and launched; then the pool is
// released and the same requests planned again, which puts every buffer at
// the same address, so the graph is replayed as it is. Every result is
// checked against the CPU. It prints the memory saved by sharing and the
// time of one graph replay.
//
//	go run ./examples/pipeline [-runtime=auto|cuda|fake] [-n 1048576] [-replays 50]
package main

import (
	"fmt"
	"io"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("pipeline", about, stderr)
	which := cmd.Runtime()
	n := cmd.Uint("n", 1<<20, "float32 elements in each buffer")
	replays := cmd.Int("replays", 0, "graph launches timed in each of 5 rounds for the replay figure (default 50 on CUDA, 5 on the fake)")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if *n == 0 || *n > 1<<28 || *replays < 0 {
		return cmd.Fail(2, "-n must be 1 to 268435456 and -replays at least 1 (0: the default)")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\n\n", rt.Description)
	r := report{w: stdout, progress: stderr}
	if !rt.CUDA {
		r.note = " (fake runtime: not a GPU timing)"
	}
	// The fake runs kernels on the CPU: fewer launches keep a run to seconds.
	switch {
	case *replays > 0:
	case rt.CUDA:
		*replays = 50
	default:
		*replays = 5
	}
	if err := pipeline(rt, uint32(*n), *replays, r); err != nil {
		return cmd.Fail(1, err)
	}
	return 0
}

// about is what -h prints before the flags.
const about = `pipeline is the program a user of cudapool writes: pinned staging buffers, a
chain of kernels over device buffers whose lifetimes let them share memory,
captured from a stream as a CUDA graph and launched; then the pool is
released, the same plan placed again at the same addresses, and the graph
replayed. Every result is checked against the CPU; it prints the memory
saved by sharing and the time of one graph launch (on the fake runtime, not
a GPU timing).`
