package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli/clitest"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

func TestDefaultRunOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake")
	for _, want := range []string{
		"model 64 -> 256 -> 256 -> 64, FP32", "NCCL's transport: NCCL's choice",
		"layer 3 whole on every GPU",
		// -clients 0: a client a slot, so that 4 GPUs are not measured with
		// a quarter of their slots busy.
		"replicas, 1 GPU, 8 slots a GPU, 8 clients", "replicas, 2 GPUs, 8 slots a GPU, 16 clients", "replicas, 4 GPUs, 8 slots a GPU, 32 clients",
		"tensor parallel, 2 GPUs, 2 groups, split", "tensor parallel, 4 GPUs, 2 groups, split",
		"batch 1:", "batch 32:", "requests/s  vs 1 GPU  wait p50  service p50  outside pool  memory nodes",
		"NCCL's communicators, 2 GPUs: 2 sets of 2, blocking, at init:", "(fake runtime: not a GPU timing)", "the run took",
	} {
		assert.Contains(t, s, want)
	}
	assert.Regexp(t, `tensor parallel, 4 GPUs, 2 groups, split +8 +\d+ +[0-9.]+x .* 0 B +0`, s, "no memory outside the pools, no memory node")
	assert.Contains(t, stderr, "tp: tensor parallel, 4 GPUs, 2 groups, split, batch 32: 8 requests...", "progress on stderr")
}

func TestEagerAndSoak(t *testing.T) {
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-gpus", "2", "-modes", "tp", "-launch", "eager", "-batches", "8", "-soak", "40")
	assert.Contains(t, stdout, "tensor parallel, 2 GPUs, 2 groups, eager")
	assert.Contains(t, stdout, "no graph")
	assert.Contains(t, stdout, "soak: 40 tensor-parallel requests on 2 GPUs at batch 8 ended in")
}

func TestAWrongOutputIsCaught(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runWith([]string{"-runtime=fake", "-gpus", "2", "-modes", "tp", "-batches", "1"}, &out, &errOut, func(c *config) { c.corruptRank = 0 })
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "output differs from the CPU reference")
	assert.Contains(t, errOut.String(), "check before")
}

func TestDumpIsMlpsFormat(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := clitest.OK(t, run, "-runtime=fake", "-gpus", "2", "-modes", "tp", "-dump", dir)
	assert.Contains(t, stdout, "dumped to "+dir)
	mf, err := mlpmodel.CheckDump(dir)
	require.NoError(t, err, "recomputed from the files and the manifest alone")
	assert.Len(t, mf.Batches, 2)
	assert.Equal(t, []int{256, 64}, mf.Layers[0].Weights.Shape)
}

// freePort is a port of 127.0.0.1 free a moment ago.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	return port
}

// runRanks runs a job of world ranks, a process a GPU, as goroutines on
// one fake of world devices (the fake's NCCL joins ranks of one Fake),
// meeting over loopback TCP, with env the job's environment less RANK.
// They launch eagerly: the fake cannot tell one rank's thread from
// another's, so one rank's capture would forbid another's cudaMalloc, as
// it forbids the capturing thread's.
func runRanks(t *testing.T, world int, args []string, env map[string]string, tweak func(*config)) ([]int, []string, []string) {
	rs := runRanksOn(t, world, args, env, func(_ int, c *config) {
		if tweak != nil {
			tweak(c)
		}
	}, nil)
	return rs.codes, rs.outs, rs.errs
}

// ranks is what runRanksOn's ranks returned, and when.
type ranks struct {
	codes      []int
	outs, errs []string
	ended      []time.Time
}

// runRanksOn is runRanks with tweak given each rank's configuration, on
// the job's fake, and stderr, when not nil, each rank's stderr to wrap.
func runRanksOn(t *testing.T, world int, args []string, env map[string]string, tweak func(rank int, c *config), stderr func(rank int, w io.Writer) io.Writer) ranks {
	rt, err := choose.Open("fake", cudarttest.WithDevices(world))
	require.NoError(t, err)
	rs := ranks{make([]int, world), make([]string, world), make([]string, world), make([]time.Time, world)}
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vars := map[string]string{"RANK": strconv.Itoa(r), "LOCAL_RANK": strconv.Itoa(r)}
			for k, v := range env {
				vars[k] = v
			}
			var out bytes.Buffer
			// A rank that gave up on a stuck request may still write.
			errOut := &lockedBuffer{}
			var w io.Writer = errOut
			if stderr != nil {
				w = stderr(r, errOut)
			}
			rs.codes[r] = runWith(args, &out, w, func(c *config) {
				c.rt = rt
				c.env = func(k string) string { return vars[k] }
				tweak(r, c)
			})
			rs.ended[r] = time.Now()
			rs.outs[r], rs.errs[r] = out.String(), errOut.String()
		}()
	}
	wg.Wait()
	return rs
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestAProcessAGPU(t *testing.T) {
	for _, world := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d ranks", world), func(t *testing.T) {
			env := map[string]string{"WORLD_SIZE": strconv.Itoa(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": freePort(t),
				"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
			codes, outs, errs := runRanks(t, world, []string{"-batches", "1,8", "-soak", "20", "-launch", "eager"}, env, nil)
			for r := range world {
				require.Equal(t, 0, codes[r], "rank %d: %s", r, errs[r])
				assert.Contains(t, errs[r], fmt.Sprintf("tp rank %d: done; outputs against the CPU reference:", r))
			}
			assert.Contains(t, outs[0], fmt.Sprintf("a process a GPU: %d ranks, rank 0 at 127.0.0.1:", world))
			assert.Contains(t, outs[0], fmt.Sprintf("tensor parallel, %d GPUs, 2 groups, eager", world))
			assert.Contains(t, outs[0], "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (peer-to-peer and shared memory off: NCCL's socket transport")
			assert.Contains(t, outs[0], fmt.Sprintf("soak: 20 tensor-parallel requests on %d GPUs", world))
			assert.Empty(t, outs[1], "only rank 0 prints the report")
		})
	}
}

// A rank that computes wrong outputs fails; the others end within their
// bound, not hang: rank 0's blocking all-reduce (eager launch) fails when
// rank 1's communicators go, as NCCL's does when its peer's process exits,
// or times out.
func TestAProcessAGPUWithABadRank(t *testing.T) {
	env := map[string]string{"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": freePort(t)}
	codes, _, errs := runRanks(t, 2, []string{"-batches", "1", "-timeout", "2s", "-launch", "eager"}, env, func(c *config) { c.corruptRank = 1 })
	assert.Equal(t, 1, codes[1])
	assert.Contains(t, errs[1], "output differs from the CPU reference")
	assert.Equal(t, 1, codes[0], "rank 0 is left alone in its next all-reduce: %s", errs[0])
	assert.Regexp(t, "timed out|ncclRemoteError", errs[0])
}

func TestTheRendezvousNeedsItsVariables(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WORLD_SIZE": "2", "RANK": "0"}, "MASTER_ADDR and MASTER_PORT must be"},
		{map[string]string{"WORLD_SIZE": "2", "RANK": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}, `RANK="2": want an integer 0 to 1`},
		{map[string]string{"WORLD_SIZE": "x"}, `WORLD_SIZE="x"`},
	} {
		var out, errOut bytes.Buffer
		code := runWith([]string{"-runtime=fake"}, &out, &errOut, func(c *config) { c.env = func(k string) string { return tc.env[k] } })
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut.String(), tc.want)
	}
}

// cref/allreduce.c -nonblocking names its communicators as the Go tool
// does, so that the two tables compare line by line.
func TestTheCReferenceNamesTheBindingsCommunicators(t *testing.T) {
	src, err := os.ReadFile("cref/allreduce.c")
	require.NoError(t, err)
	assert.Contains(t, string(src), `"communicators: %s\n", nonblocking ? "`+nonBlockingComms+`"`)
}

func TestBenchAllReduceOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-bench-allreduce", "-iters", "2", "-warmup", "1"}, &out, &errOut), errOut.String())
	out0 := out.String()
	blocking := strings.Index(out0, "communicators: "+blockingComms+"\n")
	summary := strings.Index(out0, "eager all-reduces, a time a call, each kind of communicator")
	require.Positive(t, blocking, "the blocking communicators' tables")
	require.Greater(t, summary, blocking, "the summary, last")
	for _, s := range []string{out0[:blocking], out0[blocking:summary]} {
		assert.Contains(t, s, "allreduce: 4 devices, float32 sum, out of place, 1 warm-up and 2 timed calls a size; busbw = algbw * 2(n-1)/n")
		assert.Regexp(t, `size_B +count +time_us +algbw_GBs +busbw_GBs`, s)
		assert.Regexp(t, `\n +1048576 +262144 `, s)
		assert.Regexp(t, `\n +4194304 +1048576 `, s)
		assert.NotContains(t, s, "8388608")
		assert.Contains(t, s, "small all-reduces: eager against one CUDA graph of 1 captured, a time a call")
		for _, size := range []string{"4096", "65536", "1048576"} {
			assert.Regexp(t, `\n +`+size+` +[0-9.]+ +[0-9.]+ +[0-9.]+\n`, s, "the graph of every device instantiated once all their captures ended")
		}
	}
	assert.Contains(t, out0[:blocking], "communicators: "+nonBlockingComms+"\n", "the non-blocking ones first")
	assert.Regexp(t, `size_B +non-blocking_us +blocking_us +blocking/non-b\n +1048576 +[0-9.]+ +[0-9.]+ +[0-9.]+\n +2097152 .*\n +4194304 `, out0[summary:])
	assert.Contains(t, out0, "(fake runtime: not a GPU timing)")
}

func TestHelpPrintsAParagraphThenTheFlags(t *testing.T) {
	require.True(t, strings.HasPrefix(about, "tp: the MLP of examples/mlp"))
	clitest.Help(t, run, about, "-bench-allreduce")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-gpus", "0"}, {"-gpus", "2,2"}, {"-batches", "x"}, {"-modes", "pipeline"}, {"-launch", "never"}, {"-requests", "0"},
		{"-tp-slots", "0"}, {"-scale", "3"}, {"-timeout", "0s"}, {"-bench-max", "1000"}, {"-soak", "-1"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
		assert.Contains(t, errOut.String(), "tp: ", "%v", args)
	}
}
