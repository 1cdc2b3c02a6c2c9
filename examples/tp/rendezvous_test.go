package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/nccl"
)

// loopback listens on a free port of 127.0.0.1.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := listen("127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

func someIDs(n int) []nccl.UniqueID {
	ids := make([]nccl.UniqueID, n)
	for i := range ids {
		for j := range ids[i] {
			ids[i][j] = byte(i*31 + j)
		}
	}
	return ids
}

// logs collects rank 0's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) log(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// Strays of every kind come first: a port scan, garbage, a client that
// says nothing, another job's rank, a rank out of range. Each gets a clear
// error or is dropped, and the job's ranks join all the same.
func TestRendezvousRefusesStraysAndAdmitsItsRanks(t *testing.T) {
	ln := loopback(t)
	addr := ln.Addr().String()
	const world, job = 4, 42
	ids := someIDs(2)
	var lg logs
	served := make(chan error, 1)
	go func() { served <- serveRanks(ln, job, world, ids, 10*time.Second, lg.log) }()

	scan, err := net.Dial("tcp", addr) // a port scan: connect, close
	require.NoError(t, err)
	require.NoError(t, scan.Close())

	silent, err := net.Dial("tcp", addr) // says nothing, holds the connection
	require.NoError(t, err)
	defer silent.Close()

	garbage := func(b []byte) string {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write(b)
		require.NoError(t, err)
		_, err = readAnswer(c, len(ids))
		require.Error(t, err)
		return err.Error()
	}
	http := garbage([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	assert.Contains(t, http, "rank 0 refused this rank")
	assert.Contains(t, http, "not a tp rank: its first bytes are")
	assert.Contains(t, garbage([]byte("x")), "not a tp rank", "refused at its first byte")
	assert.Contains(t, garbage(hello{job: 7, world: world, rank: 1}.marshal()), "job 0000000000000007 is not this one")
	assert.Contains(t, garbage(hello{job: job, world: 2, rank: 1}.marshal()), "WORLD_SIZE 2, rank 0's is 4")
	assert.Contains(t, garbage(hello{job: job, world: world, rank: 4}.marshal()), "RANK 4: want 1 to 3")
	assert.Contains(t, garbage(hello{job: job, world: world, rank: 0}.marshal()), "RANK 0: want 1 to 3")

	var wg sync.WaitGroup
	got := make([][]nccl.UniqueID, world)
	errs := make([]error, world)
	for r := 1; r < world; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[r], errs[r] = joinRank(addr, hello{job: job, world: world, rank: uint32(r)}, len(ids), 10*time.Second)
		}()
	}
	wg.Wait()
	for r := 1; r < world; r++ {
		require.NoError(t, errs[r], "rank %d", r)
		assert.Equal(t, ids, got[r], "rank %d", r)
	}
	require.NoError(t, <-served)
	assert.Contains(t, lg.String(), "not a tp rank")

	_, err = joinRank(addr, hello{job: job, world: world, rank: 1}, len(ids), 300*time.Millisecond)
	assert.ErrorIs(t, err, ErrRendezvous, "rank 0 listens no more once its ranks have joined")
}

func TestRendezvousRefusesARankTwice(t *testing.T) {
	ln := loopback(t)
	addr := ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- serveRanks(ln, 1, 3, someIDs(1), 2*time.Second, func(string, ...any) {}) }()
	_, err := joinRank(addr, hello{job: 1, world: 3, rank: 2}, 1, 5*time.Second)
	require.NoError(t, err)
	_, err = joinRank(addr, hello{job: 1, world: 3, rank: 2}, 1, 5*time.Second)
	assert.ErrorIs(t, err, ErrRendezvous)
	assert.ErrorContains(t, err, "RANK 2 has joined already")
	err = <-served
	assert.ErrorIs(t, err, ErrRendezvous)
	assert.ErrorContains(t, err, "[1] never joined", "rank 1 is named at the deadline")
}

// A rank whose rank 0 never comes, or is not a tp rank 0, fails within its
// bound.
func TestAJoiningRankFailsWithinItsBound(t *testing.T) {
	ln := loopback(t)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	start := time.Now()
	_, err := joinRank(addr, hello{job: 1, world: 2, rank: 1}, 1, 400*time.Millisecond)
	assert.ErrorIs(t, err, ErrRendezvous)
	assert.ErrorContains(t, err, "could not reach rank 0")
	assert.Less(t, time.Since(start), 2*time.Second)

	// A server that answers garbage.
	ln = loopback(t)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, helloBytes)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
	}()
	_, err = joinRank(ln.Addr().String(), hello{job: 1, world: 2, rank: 1}, 1, 5*time.Second)
	assert.ErrorContains(t, err, "not a tp rank 0")
}

func TestListenRefusesEveryInterface(t *testing.T) {
	_, err := listen(":0")
	assert.ErrorContains(t, err, "MASTER_ADDR is empty")
	_, err = listen("127.0.0.1")
	assert.Error(t, err)
}

// FuzzRendezvous: whatever a peer sends rank 0, or rank 0 sends a rank,
// nothing panics or hangs; rank 0 admits only a hello of its job.
func FuzzRendezvous(f *testing.F) {
	f.Add(hello{job: 9, world: 2, rank: 1}.marshal())
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte(magic))
	f.Add(append([]byte{statusOK, 0, 0, 0, 128}, make([]byte, 128)...))
	f.Add([]byte{statusRefused, 0, 0, 0, 3, 'n', 'o', '!'})
	f.Add([]byte{statusOK, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &master{job: 9, world: 3, ids: someIDs(1), joined: map[uint32]bool{}, done: make(chan struct{})}
		var answer bytes.Buffer
		_, err := m.answer(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), &answer})
		ids, aerr := readAnswer(bytes.NewReader(answer.Bytes()), 1)
		if bytes.HasPrefix(data, hello{job: 9, world: 3, rank: 1}.marshal()) || bytes.HasPrefix(data, hello{job: 9, world: 3, rank: 2}.marshal()) {
			require.NoError(t, err)
			require.NoError(t, aerr)
			require.Equal(t, m.ids, ids)
		} else {
			require.Error(t, err, "%q was admitted", data)
			require.Error(t, aerr)
		}
		_, _ = readAnswer(bytes.NewReader(data), 1)
		_, _ = readHello(bytes.NewReader(data))
	})
}
