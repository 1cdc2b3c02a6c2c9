package main

import (
	"bytes"
	"context"
	"encoding/json"
	"expvar"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli/clitest"
	"github.com/cudapool/cudapool/examples/loadgen"
	"github.com/cudapool/cudapool/pool"
)

func TestServeOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake", "-requests", "40", "-n", "512", "-layers", "3", "-mix", "1,4", "-slots", "1,2", "-handoffs", "800")
	for _, want := range []string{
		"in process", "through HTTP", "one CUDA graph a request:", "kernel by kernel:",
		"slots=1", "slots=2", "mutex pool", "per client", "cudaMallocAsync",
		"wait p50  wait p99  service p50  service p99", "every output compared in full with the CPU's",
		"slots=2 / per client", "slots=1 / mutex pool", "slots=2 / cudaMallocAsync",
		"device 35 KiB = 3.0 KiB shared + 2 × 16 KiB", "(fake runtime: not a GPU timing)",
		"hand-off alone: Acquire + Release by 8 goroutines", "Slots / channel", "within 1.5x of the channel semaphore",
	} {
		assert.Contains(t, s, want)
	}
	assert.Contains(t, stderr, "serve: through HTTP, kernel by kernel, cudaMallocAsync: 40 requests...", "progress on stderr")
}

// Each table holds one launch mode, cudaMallocAsync included: in a graph,
// its allocations are memory nodes.
func TestEveryConfigurationInATableLaunchesTheSameWay(t *testing.T) {
	for _, tc := range []struct {
		launch    string
		want, not []string
	}{
		{"graph", []string{"one CUDA graph a request:", "memory nodes of each client's graph", "cudaMallocAsync  device"}, []string{"kernel by kernel:"}},
		{"kernels", []string{"kernel by kernel:", "cudaMallocAsync  device"}, []string{"one CUDA graph a request:", "memory nodes of each client"}},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run([]string{"-runtime=fake", "-requests", "20", "-n", "256", "-slots", "2", "-launch", tc.launch, "-via", "inproc", "-handoffs", "0"}, &out, &errOut), errOut.String())
		for _, w := range tc.want {
			assert.Contains(t, out.String(), w, tc.launch)
		}
		for _, w := range tc.not {
			assert.NotContains(t, out.String(), w, tc.launch)
		}
		assert.NotContains(t, out.String(), "through HTTP")
		assert.Contains(t, out.String(), "in process, timed requests stage and check 16 elements")
		assert.NotContains(t, out.String(), "hand-off alone", "-handoffs 0")
	}
}

func TestHelpSaysWhatItDoes(t *testing.T) {
	assert.Contains(t, about, "concurrent inference requests from pool.Slots")
	clitest.Help(t, run, about, "-launch")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-requests", "0"}, {"-clients", "0"}, {"-n", "0"}, {"-layers", "0"}, {"-mix", "1,x"}, {"-slots", "0"},
		{"-via", "grpc"}, {"-launch", "warp"}, {"-handoffs", "-1"}, {"-runtime=opencl"}, {"-nope"},
	} {
		var out, errOut bytes.Buffer
		assert.NotEqual(t, 0, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
	}
}

// newTestModel is a 2-layer model over 256 floats on the fake, closed at
// cleanup.
func newTestModel(t *testing.T) *model {
	t.Helper()
	m, err := newModel(cudarttest.NewFakeT(t), 256, 2)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.close()) })
	return m
}

// A wrong answer is caught, by the full check and by the sampled one: the
// checks are not a formality.
func TestAWrongOutputFailsTheRun(t *testing.T) {
	m := newTestModel(t)
	w := newWorkload(m, []int{1})
	w.want[1][0][0] ^= 1
	b, err := newSlotsBackend(m, 2, []int{1}, true)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.close()) }()
	for _, full := range []bool{true, false} {
		_, err = loadgen.Run(2, 2*variants, inProcess(b, w, 2, full))
		assert.ErrorIs(t, err, errMismatch, "full %v", full)
	}
}

// Over stride requests in a row, the sampled check stages and checks every
// element of a batch once, whatever its length: a fault anywhere shows.
func TestTheSamplesCoverTheBatch(t *testing.T) {
	for _, floats := range []int{1, 5, samples, samples + 3, 4096, 65536} {
		in := make([]byte, 4*floats)
		seen := make([]int, floats)
		var x sampledCheck
		x.at(0, in, in)
		stride := x.stride / 4
		for i := range stride {
			x.at(i, in, in)
			n := 0
			for p := x.first; p+4 <= len(in); p += x.stride {
				seen[p/4]++
				n++
			}
			assert.LessOrEqual(t, n, 2*samples, "%d floats: request %d stages %d elements", floats, i, n)
			assert.GreaterOrEqual(t, n, min(floats, samples), "%d floats: request %d stages %d elements", floats, i, n)
		}
		for e, k := range seen {
			require.Equal(t, 1, k, "%d floats: element %d sampled %d times over %d requests", floats, e, k, stride)
		}
	}
}

// A batch a backend has no buffers or graph for is refused, not run out of
// bounds, by every backend in each launch mode.
func TestEveryBackendRefusesABatchItHasNoBuffersFor(t *testing.T) {
	m := newTestModel(t)
	w := newWorkload(m, []int{2})
	_, in, want := w.request(0)
	c := config{clients: 2, mix: []int{1, 4}, slots: []int{2}}
	for _, graphs := range []bool{true, false} {
		for _, cf := range configurations(m, c, graphs) {
			b, err := cf.make()
			require.NoError(t, err, cf.name)
			for _, rows := range []int{2, 8} {
				_, err = b.serve(context.Background(), 1, rows, &fullCheck{in, want})
				if rows == 2 && !graphs && cf.name != "slots=2" {
					// Kernel by kernel, buffers for 4 rows serve 2.
					assert.NoError(t, err, "%s, %d rows", cf.name, rows)
					continue
				}
				assert.ErrorIs(t, err, pool.ErrUnknownProfile, "%s, graphs %v, %d rows", cf.name, graphs, rows)
			}
			require.NoError(t, b.close(), cf.name)
		}
	}
}

// The baseline with no pool waits for nothing; the slots and the mutex
// report a wait for every request, and the server passes it on.
func TestWaitIsReportedApartFromService(t *testing.T) {
	m := newTestModel(t)
	w := newWorkload(m, []int{1})
	pc, err := newPerClientBackend(m, 2, []int{1}, true)
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.close()) }()
	r, err := loadgen.Run(2, 20, inProcess(pc, w, 2, true))
	require.NoError(t, err)
	assert.Zero(t, r.Wait.P99)
	assert.Positive(t, r.Service.P50)

	for _, tc := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{{"wait;dur=0.001500", 1500 * time.Nanosecond, true}, {"wait;dur=2", 2 * time.Millisecond, true}, {"", 0, false}, {"db;dur=1", 0, false}, {"wait;dur=x", 0, false}} {
		h := http.Header{}
		h.Set("Server-Timing", tc.header)
		got, err := serverWait(h)
		if !tc.ok {
			assert.Error(t, err, tc.header)
			continue
		}
		require.NoError(t, err, tc.header)
		assert.InDelta(t, tc.want, got, 1, tc.header)
	}
}

func TestTheServerAnswersAndPublishesStats(t *testing.T) {
	m := newTestModel(t)
	b, err := newSlotsBackend(m, 2, []int{1}, true)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.close()) }()
	s := b.s
	vars := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, s.Var().String())
	})
	url, stop, err := listenLoopback(handler(b, int(m.rowBytes()), vars))
	require.NoError(t, err)
	defer func() { require.NoError(t, stop()) }()
	assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:"))

	wl := newWorkload(m, []int{1})
	_, err = overHTTP(url, 1, wl, true)(0, 0)
	require.NoError(t, err)

	for _, c := range []struct {
		query, client string
		body          int
	}{{"rows=2", "0", 2 * 1024}, {"rows=1", "0", 10}, {"rows=x", "0", 1024}, {"rows=1", "", 1024}} {
		req, err := http.NewRequest(http.MethodPost, url+"/infer?"+c.query, bytes.NewReader(make([]byte, c.body)))
		require.NoError(t, err)
		if c.client != "" {
			req.Header.Set("X-Client", c.client)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%+v", c)
	}

	resp, err := http.Get(url + "/debug/vars")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st pool.SlotsStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Equal(t, 2, st.Slots)
	assert.Equal(t, "batch1", st.Profiles[0].Name)
	assert.Positive(t, st.Profiles[0].Acquisitions)
}

func TestTheRunPublishesTheSlotsAtDebugVars(t *testing.T) {
	clitest.OK(t, run, "-runtime=fake", "-requests", "8", "-n", "256", "-slots", "1", "-via", "inproc", "-handoffs", "0")
	assert.NotNil(t, expvar.Get("slots"), "published once, at the first run")
}
