package main

import (
	"bytes"
	"encoding/json"
	"expvar"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

func TestServeOnTheFake(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-requests", "40", "-n", "512", "-layers", "3", "-mix", "1,4", "-slots", "1,2"}, &out, &errOut), errOut.String())
	s := out.String()
	for _, want := range []string{
		"in process", "through HTTP", "slots=1", "slots=2", "mutex pool", "cudaMallocAsync",
		"every output checked against the CPU", "slots=2 vs cudaMallocAsync at 8 clients",
		"device 35 KiB = 3.0 KiB shared + 2 × 16 KiB", "(fake runtime: not a GPU timing)",
	} {
		assert.Contains(t, s, want)
	}
	assert.Contains(t, errOut.String(), "serve: through HTTP, cudaMallocAsync: 40 requests...", "progress on stderr")
}

func TestServeWithoutGraphs(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-requests", "20", "-n", "256", "-slots", "2", "-graph=false", "-via", "inproc"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "kernel by kernel")
	assert.NotContains(t, out.String(), "through HTTP")
}

func TestHelpSaysWhatItDoes(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "concurrent inference requests from pool.Slots")
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-requests", "0"}, {"-clients", "0"}, {"-n", "0"}, {"-layers", "0"}, {"-mix", "1,x"}, {"-slots", "0"},
		{"-via", "grpc"}, {"-runtime=opencl"}, {"-nope"},
	} {
		var out, errOut bytes.Buffer
		assert.NotEqual(t, 0, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
	}
}

// A wrong answer is caught: the check is not a formality.
func TestAWrongOutputFailsTheRun(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	m, err := newModel(f, 256, 2)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.close()) }()
	w := newWorkload(m, []int{1})
	w.want[1][0][0] ^= 1
	b, err := newSlotsBackend(m, 2, []int{1}, true)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.close()) }()
	_, err = load(2, 2*variants, inProcess(b, w))
	assert.ErrorIs(t, err, errMismatch)
}

func TestTheServerAnswersAndPublishesStats(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	m, err := newModel(f, 256, 2)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.close()) }()
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
	require.NoError(t, overHTTP(url, 1, wl)(0, 0))

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
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-runtime=fake", "-requests", "8", "-n", "256", "-slots", "1", "-via", "inproc"}, &out, &errOut), errOut.String())
	assert.NotNil(t, expvar.Get("slots"), "published once, at the first run")
}
