// Command tp serves the MLP of examples/mlp (the same parameters from the
// same seed, the same -dump files; package mlpmodel) on 1, 2 and 4 GPUs,
// two ways, and measures them:
//
//	go run ./examples/tp [-runtime=auto|cuda|fake] [-gpus 1,2,4] [-modes replicas,tp] [-batches 1,32] [-requests 200000] [-soak N] [-dump DIR]
//	go run ./examples/tp -bench-allreduce      # the all-reduce table of cref/allreduce.c
//
// Replicas: the whole model on every GPU, -slots slots on each
// (pool.MultiSlots, a cuBLAS handle and workspace per slot); a request
// takes a free slot of any GPU and runs there alone, one CUDA graph a
// slot.
//
// Tensor parallel: every request runs on every GPU. Rank r of n holds rows
// r·4096/n to (r+1)·4096/n of layer 1 (split by its outputs: each rank
// computes its part of the hidden layer, and the ReLU applies to it
// alone), the same columns of layer 2 (split by its inputs: each rank's
// GEMM is a partial product of the whole output), then one all-reduce
// (NCCL, sum, in place) adds the partial products, and layer 2's bias and
// ReLU follow. Layer 3 (16 MiB of the 96 MiB) runs whole on every rank:
// splitting it too would need a second collective a request (an
// all-gather of its output columns), whose latency is more than the
// reading of 16 MiB of weights it saves at small batches, and with it
// whole every rank holds the output, so that each process checks its own.
// The price is 16 MiB of weights more on each GPU, and the same GEMM on
// each. A group is one slot of every GPU, held by the backend for its
// life; -tp-slots groups serve requests at once, each with communicators
// of its own (one a GPU), as NCCL orders a communicator's calls and every
// rank must make them in one order: each communicator past the first
// costs its GPU 486 MiB (NCCL's own, outside the pool, 198 MiB at init and
// 288 MiB at its first all-reduce; measured on 2×H200, and charged so by
// the fake), so the default is 2, enough for one request's host work
// to overlap another's GPU work. Each group captures one CUDA graph a GPU
// with the all-reduce inside (-launch graph), two graphs around an
// all-reduce called eagerly (split), or none (eager). The fake runtime
// captures no collective yet, so it runs split unless told.
//
// An all-reduce called eagerly (split, eager) is on blocking
// communicators (nccl.WithInlineLaunch), whose operations NCCL launches in
// the call: a non-blocking one's group end starts a thread of NCCL's at
// every call, which on 2×H200 made an eager all-reduce of 1 MiB take 150
// µs a call from C against 25 µs with blocking ones, more than a whole
// request's service. Graphs keep non-blocking ones: a captured
// collective costs the same either way, and a blocking communicator is a
// split of a non-blocking one, made after it. A blocking call past its
// bound (a peer gone while NCCL connects them) fails the request with
// nccl.ErrTimeout, the call left to NCCL, as the watchdog below and the
// cleanup's bound expect of a call that never returns.
//
// Launch: one process over all the GPUs (the default), or one process a
// GPU, as torchrun and Slurm scripts launch them, from the environment:
// RANK (0 to WORLD_SIZE-1), WORLD_SIZE, MASTER_ADDR and MASTER_PORT, and
// LOCAL_RANK for the device (else RANK modulo the visible devices). Rank 0
// listens on MASTER_ADDR:MASTER_PORT only (an empty address is refused),
// makes the NCCL unique id of each group's communicator and hands them to
// each rank that says hello with the same job (a hash of the flags that
// change what is computed), WORLD_SIZE and a RANK not yet seen; anything
// else (a stray client, a port scan, garbage) gets an error saying why,
// or is dropped after 5 s of silence, and the ranks go on. It stops
// listening once every rank has joined, or fails after
// -rendezvous-timeout (60 s) naming the ranks missing; a rank dials until
// that bound. A process per GPU runs tensor parallel only, with -tp-slots
// clients, client k always on group k. On one host with 2 GPUs:
//
//	WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=0 LOCAL_RANK=0 tp &
//	WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=1 LOCAL_RANK=1 tp
//
// On two machines with a GPU each, rank 0 on host a (10.0.0.1):
//
//	a$ WORLD_SIZE=2 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=0 LOCAL_RANK=0 tp
//	b$ WORLD_SIZE=2 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=1 LOCAL_RANK=0 tp
//
// with the port open between them; NCCL then connects the ranks itself
// (NCCL_SOCKET_IFNAME picks its interface). NCCL_P2P_DISABLE=1
// NCCL_SHM_DISABLE=1 forces NCCL's socket transport, the path between
// machines, on one host; the report says which of NCCL's transport
// variables are set.
//
// A tensor-parallel request is bounded (-timeout, 5 s): its wait for its
// devices polls the streams and the communicators' errors (nccl's
// Library.Wait), never synchronising a stream with a collective in
// flight, and past the bound aborts its communicators; and a watchdog
// that no call into CUDA or NCCL holds fails a request still in progress
// at its bound wherever it is (a launch, a poll or an eager group that
// never returns), aborting its group's communicators in the background.
// Either says so on stderr at once, and the process exits with that
// error after the cleanup (which synchronises the devices) or after
// nccl.AbortWait + 1 s (3 s), whichever comes first: a rank whose peer is
// killed mid-request exits within -timeout + 3 s, 8 s by default. The
// default is 5 s, not nccl.DefaultTimeout's 10 s, for that: over NVLink
// nothing tells NCCL a peer is gone, so the bound is all that notices,
// and a request takes a millisecond or less. The communicators' calls
// are given nccl.DefaultTimeout unless -timeout is longer: their inits
// wait for every rank to join, seconds on a GPU. A replica's wait for a
// slot, and a tensor-parallel request's for a group, are bounded by
// -timeout too.
//
// Each timed run is an untimed pass whose outputs are all compared with
// the CPU's reference (within 1e-4 relative or 1e-5 absolute), the timed
// requests (16 outputs each checked), and another full pass. The report
// gives requests/s and the p50 of the wait (for a slot, or a group) and of
// the service, against one GPU; the device memory NCCL's communicators
// took (apart), what each setup took beside its pools, and what the timed
// requests took outside them (0 B is the target); the memory nodes of the
// request graphs (0 is the target); and the outputs' worst deviation.
// -soak N serves N more tensor-parallel requests at the largest GPU count
// and the smallest batch, and says how long they took.
//
// -bench-allreduce times ncclAllReduce over every visible GPU (one
// process, float32 sum, out of place) from 1 MiB to 256 MiB as nccl-tests
// does: -warmup calls, then -iters calls between two readings of the
// host's clock, all streams synchronised; algbw is bytes over time, busbw
// algbw·2(n-1)/n. Then eager against graph-captured small all-reduces.
// It does so with each kind of package nccl's communicators: non-blocking,
// then blocking (nccl.WithInlineLaunch), then prints their eager times
// side by side. cref/allreduce.c prints the same tables from C, to
// compare: with blocking communicators (ncclCommInitAll), or with
// -nonblocking with the non-blocking ones package nccl makes, each group
// end polled until done.
//
// On the fake runtime the widths shrink by -scale (16 unless given), the
// requests to 8 a run, and the bench to 4 MiB; its timings are not a
// GPU's.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli"
	"github.com/cudapool/cudapool/nccl"
)

const about = `tp: the MLP of examples/mlp (1024 -> 4096 -> 4096 -> 1024, FP32, the same
parameters from the same seed) served on 1, 2 and 4 GPUs as replicas (the
whole model on every GPU, slots on all of them: pool.MultiSlots) and
tensor parallel (layer 1 split by its outputs, layer 2 by its inputs, one
NCCL all-reduce, layer 3 whole on every GPU), in one process over all the
GPUs, or one process a GPU launched with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT (rank 0 listens there only). It prints requests/s, the p50 of
the wait and of the service, NCCL's memory apart from the pool's, the
memory taken outside the pools during the timed requests and the request
graphs' memory nodes, all outputs compared with the CPU's outside the
timed requests. -bench-allreduce prints the all-reduce table that
cref/allreduce.c prints from C. NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
force NCCL's socket transport. Progress goes to stderr, the tables to
stdout.`

func main() { cli.Main(run) }

// config is what the flags and the environment ask for.
type config struct {
	runtime     string
	gpus        []int
	replicas    bool
	tp          bool
	batches     []int
	requests    int
	clients     int
	slots       int
	tpSlots     int
	launch      string
	seed        uint64
	scale       int
	soak        int
	dump        string
	timeout     time.Duration
	rvTimeout   time.Duration
	bench       bool
	benchMax    uint64
	iters       int
	warmup      int
	env         func(string) string // os.Getenv, or the tests'
	rt          *choose.Runtime     // tests: a runtime shared by the ranks of one job
	aborted     *abortSignal        // raised by a request whose communicators failed
	corruptRank int                 // tests: this rank's parameters differ from the CPU's (-1: none)
}

func run(args []string, stdout, stderr io.Writer) int { return runWith(args, stdout, stderr, nil) }

// runWith is run with tweak, when not nil, applied to the configuration.
func runWith(args []string, stdout, stderr io.Writer, tweak func(*config)) int {
	cmd := cli.New("tp", about, stderr)
	c := config{env: os.Getenv, corruptRank: -1}
	cmd.RuntimeVar(&c.runtime)
	gpus := cmd.String("gpus", "1,2,4", "GPU counts to serve on, comma-separated; counts over the visible GPUs are skipped, saying so")
	modes := cmd.String("modes", "replicas,tp", "replicas, tp or both, comma-separated")
	batches := cmd.String("batches", "1,32", "batch sizes, comma-separated")
	cmd.IntVar(&c.requests, "requests", 200000, "timed requests a run, a run being one configuration at one batch size (a run much shorter than a second measures the clients' start more than the GPUs)")
	cli.Fake(cmd, "requests", &c.requests, 8)
	cmd.IntVar(&c.clients, "clients", 0, "concurrent clients, in one process; 0: one a slot, so that every slot can be busy (replicas: -slots a GPU served; tensor parallel: -tp-slots); a process per GPU has -tp-slots")
	cmd.IntVar(&c.slots, "slots", 8, "replicas: slots a GPU")
	cmd.IntVar(&c.tpSlots, "tp-slots", 2, "tensor parallel: groups (a slot and a communicator on every GPU) serving at once")
	cmd.StringVar(&c.launch, "launch", launchGraph, "tensor parallel: graph (one CUDA graph a GPU, the all-reduce inside), split (two graphs around an eager all-reduce) or eager (split on the fake unless given)")
	cli.Fake(cmd, "launch", &c.launch, launchSplit)
	cmd.Uint64Var(&c.seed, "seed", 1, "seed of the parameters and inputs")
	cmd.IntVar(&c.scale, "scale", 1, "divide every width by this, 1 to 16, a power of 2 (16 on the fake unless given)")
	cli.Fake(cmd, "scale", &c.scale, 16)
	cmd.IntVar(&c.soak, "soak", 0, "then serve this many tensor-parallel requests more, at the most GPUs and the smallest batch")
	cmd.StringVar(&c.dump, "dump", "", "write the parameters, an input batch a batch size and its tensor-parallel outputs, and manifest.json, into this directory (as examples/mlp does)")
	cmd.DurationVar(&c.timeout, "timeout", defaultTimeout, "bound of a request, its wait for a slot or group included; a communicator's calls get this or "+nccl.DefaultTimeout.String()+", the longer")
	cmd.DurationVar(&c.rvTimeout, "rendezvous-timeout", DefaultRendezvousTimeout, "a process per GPU: how long rank 0 waits for the ranks, and a rank for rank 0")
	cmd.BoolVar(&c.bench, "bench-allreduce", false, "only time ncclAllReduce over every visible GPU, 1 MiB to -bench-max, as cref/allreduce.c does")
	cmd.Uint64Var(&c.benchMax, "bench-max", 256<<20, "-bench-allreduce: the largest size in bytes, a power of 2 of 1 MiB or more (4 MiB on the fake unless given)")
	cli.Fake(cmd, "bench-max", &c.benchMax, 4<<20)
	cmd.IntVar(&c.iters, "iters", 20, "-bench-allreduce: timed calls a size")
	cmd.IntVar(&c.warmup, "warmup", 5, "-bench-allreduce: untimed calls a size first")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	var err error
	c.gpus, err = cli.Positives(*gpus, 1024, true)
	if err == nil {
		c.batches, err = cli.Positives(*batches, 4096, true)
	}
	for _, m := range strings.Split(*modes, ",") {
		switch strings.TrimSpace(m) {
		case "replicas":
			c.replicas = true
		case "tp":
			c.tp = true
		default:
			err = fmt.Errorf("-modes %q: want replicas, tp or both", *modes)
		}
	}
	switch {
	case err != nil:
		return cmd.Fail(2, err)
	case c.launch != launchGraph && c.launch != launchSplit && c.launch != launchEager:
		return cmd.Fail(2, fmt.Errorf("-launch %q: want graph, split or eager", c.launch))
	case c.requests < 1 || c.clients < 0 || c.clients > 1024 || c.slots < 1 || c.tpSlots < 1 || c.tpSlots > 64 || c.soak < 0:
		return cmd.Fail(2, "-requests must be at least 1, -clients 0 to 1024, -slots at least 1, -tp-slots 1 to 64, -soak 0 or more")
	case c.scale < 1 || c.scale > 16 || c.scale&(c.scale-1) != 0:
		return cmd.Fail(2, fmt.Errorf("-scale %d: want a power of 2, 1 to 16", c.scale))
	case c.timeout <= 0 || c.rvTimeout <= 0:
		return cmd.Fail(2, "-timeout and -rendezvous-timeout must be positive")
	case c.benchMax < 1<<20 || c.benchMax&(c.benchMax-1) != 0 || c.iters < 1 || c.warmup < 0:
		return cmd.Fail(2, "-bench-max must be a power of 2 of 1 MiB or more, -iters at least 1, -warmup 0 or more")
	}
	if tweak != nil {
		tweak(&c)
	}
	if c.env("WORLD_SIZE") != "" && c.env("RANK") != "0" {
		// A process a GPU: rank 0 prints the report.
		stdout = io.Discard
	}
	rt := c.rt
	if rt == nil {
		// The fake gets as many devices as the most GPUs asked for.
		most := 1
		for _, n := range c.gpus {
			most = max(most, n)
		}
		if rt, err = choose.Open(c.runtime, cudarttest.WithDevices(most)); err != nil {
			return cmd.Fail(1, err)
		}
		defer func() {
			// Not after an abort: a call may still be running in the
			// libraries (see bounded), which closing would unload.
			if !c.aborted.raised() {
				rt.Close()
			}
		}()
	}
	return cmd.Run(rt, stdout, func() (err error) {
		if c.bench {
			err = benchAllReduce(rt, c, stdout, stderr)
		} else {
			c.aborted = newAbortSignal()
			err = bounded(c.aborted, stderr, func() error { return serveAll(rt, c, stdout, stderr) })
		}
		if err == nil && !rt.CUDA {
			fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
		}
		return err
	})
}

// transportVars are NCCL's variables that choose its transport: the report
// says which are set.
var transportVars = []string{"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NET", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"}

// transport describes the transport variables set.
func transport(env func(string) string) string {
	var set []string
	for _, v := range transportVars {
		if x := env(v); x != "" {
			set = append(set, v+"="+x)
		}
	}
	if len(set) == 0 {
		return "NCCL's transport: NCCL's choice (none of " + strings.Join(transportVars, ", ") + " set)"
	}
	s := "NCCL's transport variables: " + strings.Join(set, " ")
	if env("NCCL_P2P_DISABLE") == "1" && env("NCCL_SHM_DISABLE") == "1" {
		s += " (peer-to-peer and shared memory off: NCCL's socket transport, the path between machines, unless InfiniBand is there)"
	}
	return s
}

// defaultTimeout is -timeout's default: see the package doc for why it is
// shorter than nccl.DefaultTimeout.
const defaultTimeout = 5 * time.Second

// initTimeout bounds the communicators' calls, their inits included.
func (c config) initTimeout() time.Duration { return max(c.timeout, nccl.DefaultTimeout) }

// commOptions are the serving communicators' options: blocking ones where a
// request calls its all-reduce eagerly (see the package doc).
func (c config) commOptions() []nccl.CommOption {
	opts := []nccl.CommOption{nccl.WithTimeout(c.initTimeout())}
	if c.launch != launchGraph {
		opts = append(opts, nccl.WithInlineLaunch())
	}
	return opts
}

// commKind names the serving communicators' kind, for the report.
func commKind(comms [][]*nccl.Comm) string {
	if comms[0][0].InlineLaunch() {
		return "blocking"
	}
	return "non-blocking"
}
