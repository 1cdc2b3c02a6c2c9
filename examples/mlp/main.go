// Command mlp serves a multi-layer perceptron from pool.Slots, its math in
// cuBLAS, and load-tests it against one pool behind a mutex and against
// per-request cudaMallocAsync, in one run.
//
//	go run ./examples/mlp [-runtime=auto|cuda|fake] [-requests 10000] [-repeat 3] [-clients 8] [-slots 1,2,4,8] [-launch both] [-dump DIR]
//
// The model: 1024 → 4096 → 4096 → 1024, FP32. Each layer is a cuBLAS GEMM
// (cublasGemmEx, FP32 accumulation, TF32 off) of its weights W_l as A (M =
// the layer's outputs, K its inputs, column-major) by the batch's
// activations as B (K × batch, a column per request row), then a PTX
// kernel adding the layer's bias b_l and, after the first two layers,
// clamping at 0 (ReLU). The parameters, 96 MiB, are drawn from -seed by a
// PCG (math/rand/v2, seeded with the seed and 0x6d6c70): each W_l's
// elements in its column-major order, uniform in [-a, a) with a =
// sqrt(6/inputs), then b_l's, uniform in [-0.1, 0.1), layer after layer.
// The inputs are uniform in [-1, 1), from a PCG seeded with the seed and
// the batch size.
//
// Slots: a shared buffer holds the parameters; profiles batch1, batch8 and
// batch32 each hold pinned input and output staging and two activation
// buffers; each slot has a stream, a cuBLAS handle on it and a 32 MiB
// workspace in its own region (cublas.Library.ForSlots, attached to the
// slots). A CUDA graph is captured once per slot and profile on the slot's
// stream, and each graph's nodes
// are counted: a memory node in any of them is an error. Baselines: one
// pool holding one set of the same buffers and a workspace, one stream and
// one handle, behind a mutex; and per-request cudaMallocAsync, with a
// stream, a handle with no workspace set (cuBLAS takes its own from the
// default memory pool) and pinned staging per client, the activations
// allocated and freed in every request. Each is measured launching one
// graph a request and call by call.
//
// Slots=N serve at most N requests at once, so each slot count is paired
// with cudaMallocAsync from N clients (at most -clients): as many requests
// in flight. The two are set up side by side and, at each batch size,
// measured one after the other -repeat times; the ratio reported is the
// median of the repetitions' ratios, with the lowest and the highest, so
// that the noise shows where both are bound by the device. Slots are
// loaded from -clients clients that wait for a slot in turn, which the
// baseline's clients never do. The mutex pool and cudaMallocAsync from
// -clients clients are measured once a batch size, for reference. The
// run's time grows as -requests × -repeat; its report ends with how long
// it took.
//
// For each timed run: an untimed pass whose outputs are all compared with
// the CPU's reference (the warm-up; a request a client, 2 at least), the
// timed requests (each stages its whole input and checks 16 output
// elements), and another full pass. The reference computes each GEMM in
// float64 and rounds it to float32, then adds the bias in float32; every
// output must be within 1e-4 of it relative, or 1e-5 absolute, and the
// worst seen is printed.
//
// Device memory: cudaMemGetInfo before and after each configuration's
// setup (what it took beside its pool's arena: the cuBLAS handles' fixed
// charge, the baseline's cudaMalloc) and before and after its timed
// requests (what the requests took outside any pool; 0 B is the target for
// slots). The default memory pool's reserved bytes are inside the second
// figure: cudart has no call reading cudaMemPoolAttrReservedMemCurrent.
//
// Bandwidth: at batch 1 a request reads all the parameters, so memory
// bandwidth bounds it. The device's bandwidth is measured as a
// cudaMemcpyAsync of -copy bytes device to device between two events
// (bytes read plus bytes written, over the time), and each configuration's
// requests/s × parameter bytes is printed against it.
//
// Launch cost: 1 client at batch 1, a slot launching one graph a request
// against separate launches on the slot and against cudaMallocAsync.
//
// -dump DIR writes the parameters, one input batch per profile and its
// outputs as little-endian float32 files, with manifest.json describing
// them (shapes, column-major layout, layer order, activations), so that
// another framework can recompute the outputs.
//
// On the fake runtime the widths shrink by -scale (16 unless given) and the
// requests to 12 a run and -repeat to 1; its timings are not a GPU's.
package main

import (
	"fmt"
	"io"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/examples/cli"
)

const about = `mlp: a multi-layer perceptron (1024 -> 4096 -> 4096 -> 1024, FP32,
cuBLAS GEMMs, bias and ReLU in a PTX kernel) served from pool.Slots, each
slot with its own stream, cuBLAS handle and workspace and a CUDA graph per
batch profile (1, 8, 32), load-tested against one pool behind a mutex and
against per-request cudaMallocAsync with cuBLAS allocating its own
workspace. Each slot count N is compared with cudaMallocAsync from N
clients, as many requests in flight, the two measured one after the other
-repeat times (the median ratio is reported, with its range); the run's
time grows as -requests x -repeat, and the report ends with how long it
took. It prints requests/s and the p50/p99 of the wait for a slot and
of the service apart, the ratios, the graphs' memory nodes, the device
memory taken outside the pool during the timed requests, the parameters'
read rate against the device's copy bandwidth, and the worst deviation of
the outputs, all compared with the CPU's outside the timed requests.
Progress goes to stderr, the tables to stdout.`

func main() { cli.Main(run) }

// config is what the flags ask for.
type config struct {
	runtime       string
	requests      int
	repeat        int
	clients       int
	slots         []int
	batches       []int
	launches      []bool // graphs or not, in the order measured
	seed          uint64
	scale         int
	copyBytes     uint64
	dump          string
	corruptParams bool // tests: change one parameter on the device after loading it
}

func run(args []string, stdout, stderr io.Writer) int { return runWith(args, stdout, stderr, nil) }

// runWith is run with tweak, when not nil, applied to the configuration the
// flags give: the tests' way to break a run on purpose.
func runWith(args []string, stdout, stderr io.Writer, tweak func(*config)) int {
	cmd := cli.New("mlp", about, stderr)
	var c config
	cmd.RuntimeVar(&c.runtime)
	cmd.IntVar(&c.requests, "requests", 10000, "timed requests a run, a run being one configuration at one batch size in one launch mode, once for each -repeat where paired (12 on the fake unless given)")
	cli.Fake(cmd, "requests", &c.requests, 12)
	cmd.IntVar(&c.repeat, "repeat", 3, "times each slot count and cudaMallocAsync with as many clients are measured, one after the other, at each batch size (1 on the fake unless given)")
	cli.Fake(cmd, "repeat", &c.repeat, 1)
	cmd.IntVar(&c.clients, "clients", 8, "concurrent clients of the slots, the mutex pool and the reference cudaMallocAsync")
	slots := cmd.String("slots", "1,2,4,8", "slot counts to measure, comma-separated")
	batches := cmd.String("batches", "1,8,32", "batch sizes, comma-separated: a profile each")
	launch := cmd.String("launch", "both", "graph (one CUDA graph launch a request), calls (each copy, GEMM and kernel launched) or both")
	cmd.Uint64Var(&c.seed, "seed", 1, "seed of the parameters and inputs")
	cmd.IntVar(&c.scale, "scale", 1, "divide every width by this, 1 to 16, a power of 2 (16 on the fake unless given)")
	cli.Fake(cmd, "scale", &c.scale, 16)
	copyBytes := cmd.Uint64("copy", 1<<30, "bytes of the device-to-device copy that measures the bandwidth (16 MiB on the fake unless given)")
	cli.Fake(cmd, "copy", &c.copyBytes, 16<<20)
	cmd.StringVar(&c.dump, "dump", "", "write the parameters, an input batch per profile and its outputs, and manifest.json, into this directory")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	var err error
	c.slots, err = cli.Positives(*slots, 1024, true)
	if err == nil {
		c.batches, err = cli.Positives(*batches, 4096, true)
	}
	if err == nil {
		c.launches, err = cli.Launches(*launch, "calls")
	}
	switch {
	case err != nil:
		return cmd.Fail(2, err)
	case c.requests < 1 || c.clients < 1 || c.clients > 1024 || c.repeat < 1 || c.repeat > 100:
		return cmd.Fail(2, "-requests must be at least 1, -clients 1 to 1024, -repeat 1 to 100")
	case c.scale < 1 || c.scale > 16 || c.scale&(c.scale-1) != 0:
		fmt.Fprintf(stderr, "mlp: -scale %d: want a power of 2, 1 to 16\n", c.scale)
		return 2
	case *copyBytes < 1<<20:
		fmt.Fprintf(stderr, "mlp: -copy %d: want at least 1 MiB\n", *copyBytes)
		return 2
	}
	c.copyBytes = *copyBytes
	if tweak != nil {
		tweak(&c)
	}
	rt, err := choose.Open(c.runtime)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	return cmd.Run(rt, stdout, func() error { return measure(rt, c, stdout, stderr) })
}
