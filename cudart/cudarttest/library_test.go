package cudarttest_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/record"
	"github.com/cudapool/cudapool/internal/check/require"
)

// toy is the fake of a small library, "toy", with the calls toyCreate_v2
// and toyFill: what a library's fake keeps, made once a fake.
type toy struct {
	lib  *cudarttest.Library
	made int // times Attach made it
	// reach and done are a collective's ranks reached, by device, and
	// whether it ran: only its pieces touch them, under the fake's lock.
	reach map[int]bool
	done  bool
}

func attachToy(f *cudarttest.Fake) *toy {
	return cudarttest.Attach(f, "toy", []string{"toyCreate_v2", "toyFill"}, func(l *cudarttest.Library) *toy {
		return &toy{lib: l, made: 1, reach: map[int]bool{}}
	})
}

// fill is toyFill: n bytes of v at p, queued on s of device.
func (y *toy) fill(device int, s cudart.Stream, p cudart.DevicePtr, v byte, n int) error {
	return y.lib.Enqueue(cudarttest.Work{Device: device, Stream: s, Call: "toyFill", Run: func(a *cudarttest.Access) error {
		return a.Write(p, bytes.Repeat([]byte{v}, n))
	}})
}

// The library's state is made once a fake, however many times it attaches.
func TestAttachMakesTheStateOnce(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	assert.True(t, y == attachToy(f), "the second Attach returns the first's state")
	assert.Equal(t, 1, y.made)
	g := cudarttest.NewFakeT(t)
	assert.False(t, y == attachToy(g), "another fake has its own")
}

// bufferAndStream makes n bytes of device memory and a stream on device,
// freed and destroyed at cleanup.
func bufferAndStream(t *testing.T, f *cudarttest.Fake, device int, n uint64) (cudart.DevicePtr, cudart.Stream) {
	t.Helper()
	p, err := f.Malloc(device, n)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Free(device, p)) })
	s, err := f.StreamCreate(device)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.StreamDestroy(device, s)) })
	return p, s
}

// A library's work runs when a synchronisation reaches it, in stream order
// with the runtime's own work, and not before.
func TestLibraryWorkRunsInStreamOrder(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, s := bufferAndStream(t, f, 0, 64)
	require.NoError(t, f.MemsetAsync(0, p, 1, 64, s))
	var seen []byte
	require.NoError(t, y.lib.Enqueue(cudarttest.Work{Device: 0, Stream: s, Call: "toyFill", Run: func(a *cudarttest.Access) error {
		seen = make([]byte, 64)
		if err := a.Read(p, seen); err != nil {
			return err
		}
		return a.Write(p, bytes.Repeat([]byte{2}, 32))
	}}))
	require.NoError(t, f.MemsetAsync(0, p.Add(16), 3, 8, s))
	require.True(t, seen == nil, "queued work runs at a synchronisation")
	require.NoError(t, f.StreamSynchronize(0, s))
	assert.Equal(t, bytes.Repeat([]byte{1}, 64), seen, "the work ran after the memset before it")
	out := make([]byte, 64)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, 64), cudart.DeviceToHost))
	want := slicesConcat(bytes.Repeat([]byte{2}, 16), bytes.Repeat([]byte{3}, 8), bytes.Repeat([]byte{2}, 8), bytes.Repeat([]byte{1}, 32))
	assert.Equal(t, want, out, "and before the memset after it")
	assert.Equal(t, []string{"cudaMalloc", "cudaStreamCreate", "cudaMemsetAsync", "cudaMemsetAsync", "cudaStreamSynchronize", "cudaMemcpy"}, f.Calls(), "the library's calls are not the runtime's")
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Synchronize runs the device's work, or only a stream's and what it waits
// for, the calls not logged.
func TestLibrarySynchronize(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, s := bufferAndStream(t, f, 0, 64)
	_, s2 := bufferAndStream(t, f, 0, 1)
	ran := map[cudart.Stream]int{}
	queue := func(on cudart.Stream) {
		require.NoError(t, y.lib.Enqueue(cudarttest.Work{Device: 0, Stream: on, Call: "toyFill", Run: func(a *cudarttest.Access) error {
			ran[on]++
			return a.Write(p, []byte{1})
		}}))
	}
	queue(s)
	queue(s2)
	f.ResetCalls()
	require.NoError(t, y.lib.Synchronize(0, s2))
	assert.Equal(t, map[cudart.Stream]int{s2: 1}, ran, "only s2's work")
	queue(s2)
	require.NoError(t, y.lib.Synchronize(0))
	assert.Equal(t, map[cudart.Stream]int{s: 1, s2: 2}, ran, "all of the device's")
	assert.Empty(t, f.Calls())
	require.ErrorIs(t, y.lib.Synchronize(0, s2+0x1000), cudart.ErrInvalidResourceHandle, "a stream never made")
}

// Work that touches memory outside an allocation faults the device when it
// runs, as a kernel does: the synchronisation and every later call return
// cudaErrorIllegalAddress, naming the call and the allocation, and nothing
// more is queued.
func TestLibraryWorkFaultIsSticky(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, err := f.Malloc(0, 64)
	require.NoError(t, err)
	require.NoError(t, y.fill(0, 0, p, 7, 65))
	err = f.DeviceSynchronize(0)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), "toyFill writes 65 B at")
	assert.Contains(t, err.Error(), "from cudaMalloc")
	t.Log(err)
	require.ErrorIs(t, f.StreamSynchronize(0, 0), cudart.ErrIllegalAddress, "the fault is sticky")
	require.ErrorIs(t, y.fill(0, 0, p, 7, 1), cudart.ErrIllegalAddress, "nothing more is queued")
	require.ErrorIs(t, y.lib.SetDevice(0), cudart.ErrIllegalAddress)
	require.NoError(t, f.DeviceReset(0))
	require.ErrorIs(t, y.lib.SetDevice(0), cudart.ErrDevicesUnavailable, "a reset after a fatal fault leaves the device lost")
}

// Check and Buffer tell the library, before it changes anything, whether an
// access would fault and which buffer it starts in.
func TestLibraryWorkChecksBeforeItWrites(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, err := f.Malloc(0, 64)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Free(0, p)) })
	var inside, past error
	var name string
	var end cudart.DevicePtr
	var ok bool
	require.NoError(t, y.lib.Enqueue(cudarttest.Work{Device: 0, Stream: 0, Call: "toyFill", Run: func(a *cudarttest.Access) error {
		inside, past = a.Check(p, 64, true), a.Check(p.Add(32), 64, false)
		name, end, ok = a.Buffer(p.Add(8))
		return nil
	}}))
	require.NoError(t, f.DeviceSynchronize(0))
	assert.NoError(t, inside)
	assert.ErrorContains(t, past, "past the end of device memory")
	require.True(t, ok)
	assert.Contains(t, name, "device memory")
	assert.Equal(t, p.Add(64), end)
}

// FailCall and FailCallNth take a library's names once it is attached, with
// or without "_v2"; Injected counts FailCallNth's calls down; FailNth counts
// the runtime's calls only.
func TestLibraryFaultInjection(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	err := f.FailCall("toyFill", 13)
	require.Error(t, err, "no library is attached")
	assert.Contains(t, err.Error(), "once its binding is opened on the fake")
	y := attachToy(f)
	require.NoError(t, f.FailCallNth("toyCreate", 2, 3), "the C name of toyCreate_v2")
	_, hit := y.lib.Injected("toyCreate_v2")
	assert.False(t, hit, "the first call")
	code, hit := y.lib.Injected("toyCreate_v2")
	assert.True(t, hit, "the second call fails")
	assert.Equal(t, cudart.Code(3), code)
	_, hit = y.lib.Injected("toyCreate_v2")
	assert.False(t, hit, "once")
	require.NoError(t, f.FailNth(1, 2))
	_, hit = y.lib.Injected("toyFill")
	assert.False(t, hit, "FailNth counts the runtime's calls")
	_, err = f.Malloc(0, 1)
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	require.NoError(t, f.FailCall("toyFill", 13))
	for range 2 {
		code, hit = y.lib.Injected("toyFill")
		assert.True(t, hit)
		assert.Equal(t, cudart.Code(13), code)
	}
	f.ClearFaults()
	_, hit = y.lib.Injected("toyFill")
	assert.False(t, hit)
	err = f.FailCall("toySgemm", 13)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "toyCreate_v2, toyFill")
}

// What a library makes is charged to the device until freed or reset; a
// handle never freed is a leak reported with its line, and the library's
// upkeep is not.
func TestLibraryResources(t *testing.T) {
	rec := &record.TB{}
	f := cudarttest.NewFakeT(rec, cudarttest.WithDeviceMemory(1<<30))
	y := attachToy(f)
	free := func() uint64 {
		n, _, err := f.MemGetInfo(0)
		require.NoError(t, err)
		return n
	}
	before := free()
	_, file, line, _ := runtime.Caller(0)
	h, err := y.lib.Make(cudarttest.Resource{Device: 0, Bytes: 64 << 20, Call: "toyCreate", What: "toy handle"})
	require.NoError(t, err)
	up, err := y.lib.Make(cudarttest.Resource{Device: 0, Bytes: 2 << 20, Call: "toyCreate"})
	require.NoError(t, err)
	assert.Equal(t, before-66<<20, free())
	assert.Equal(t, 1, f.Live().LibraryHandles, "the upkeep is no handle")
	_, err = y.lib.Make(cudarttest.Resource{Device: 0, Bytes: 1 << 30, Call: "toyCreate", What: "toy handle"})
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Equal(t, before-66<<20, free(), "a refused Make charges nothing")
	err = f.CheckLeaks()
	require.ErrorIs(t, err, cudarttest.ErrLeaked)
	assert.Contains(t, err.Error(), fmt.Sprintf("toy handle 0x%x on device 0 from toyCreate", h))
	assert.Contains(t, err.Error(), fmt.Sprintf("called at %s:%d in cudart/cudarttest_test.TestLibraryResources", filepath.Base(file), line+1))
	assert.NotContains(t, err.Error(), fmt.Sprintf("0x%x", up), "the upkeep is no leak")
	t.Log(err)
	require.True(t, y.lib.Free(h))
	require.False(t, y.lib.Free(h), "freed already")
	assert.False(t, y.lib.Live(h))
	assert.True(t, y.lib.Live(up))
	assert.Equal(t, before-2<<20, free())
	require.NoError(t, f.DeviceReset(0))
	assert.False(t, y.lib.Live(up), "the reset destroyed the upkeep")
	assert.False(t, y.lib.Free(up))
	assert.Equal(t, before, free())
	rec.RunCleanups()
	assert.Empty(t, rec.Errors)
	assert.Empty(t, rec.Fatals)
}

// A capture records a library's work as a kernel node, with an allocation
// and a free node around it for work that takes scratch memory, and the
// graph's launch runs it.
func TestLibraryWorkIsCapturedAsAKernel(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, s := bufferAndStream(t, f, 0, 64)
	for _, scratch := range []bool{false, true} {
		runs := 0
		require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeGlobal))
		require.NoError(t, y.lib.Enqueue(cudarttest.Work{Device: 0, Stream: s, Call: "toyFill", Scratch: scratch, Run: func(a *cudarttest.Access) error {
			runs++
			return a.Write(p, []byte{byte(runs)})
		}}))
		g, err := f.StreamEndCapture(0, s)
		require.NoError(t, err)
		want := []cudart.GraphNodeType{cudart.GraphNodeKernel}
		if scratch {
			want = []cudart.GraphNodeType{cudart.GraphNodeMemAlloc, cudart.GraphNodeKernel, cudart.GraphNodeMemFree}
		}
		assert.Equal(t, want, nodeTypes(t, f, g), "scratch %t", scratch)
		x, err := f.GraphInstantiate(0, g)
		require.NoError(t, err)
		require.NoError(t, f.GraphLaunch(0, x, s))
		require.NoError(t, f.GraphLaunch(0, x, s))
		require.NoError(t, f.StreamSynchronize(0, s))
		assert.Equal(t, 2, runs, "each launch runs it")
		require.NoError(t, f.GraphExecDestroy(0, x))
		require.NoError(t, f.GraphDestroy(0, g))
	}
}

// Work ordered through a library's own stream (Work.Serial) is captured
// with an event-wait node before the first work of each Serial and an
// event-record node after each, as CUDA records NCCL's kernels; the nodes
// run nothing, and the launch runs the work.
func TestLibrarySerialWorkIsCapturedWithEventNodes(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	y := attachToy(f)
	p, s := bufferAndStream(t, f, 0, 64)
	runs := 0
	fill := func(serial uintptr) {
		require.NoError(t, y.lib.Enqueue(cudarttest.Work{Device: 0, Stream: s, Call: "toyFill", Serial: serial, Run: func(a *cudarttest.Access) error {
			runs++
			return a.Write(p, []byte{byte(runs)})
		}}))
	}
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeGlobal))
	fill(1)
	fill(1)
	fill(2)
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	wait, kernel, record := cudart.GraphNodeWaitEvent, cudart.GraphNodeKernel, cudart.GraphNodeEventRecord
	assert.Equal(t, []cudart.GraphNodeType{wait, kernel, record, kernel, record, wait, kernel, record}, nodeTypes(t, f, g))
	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, f.GraphLaunch(0, x, s))
	require.NoError(t, f.StreamSynchronize(0, s))
	assert.Equal(t, 3, runs, "the launch runs the three, the event nodes nothing")
	require.NoError(t, f.GraphExecDestroy(0, x))
	require.NoError(t, f.GraphDestroy(0, g))

	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeGlobal))
	fill(1)
	g, err = f.StreamEndCapture(0, s)
	require.NoError(t, err)
	assert.Equal(t, []cudart.GraphNodeType{wait, kernel, record}, nodeTypes(t, f, g), "a new capture waits again")
	require.NoError(t, f.GraphDestroy(0, g))
	fill(1)
	require.NoError(t, f.StreamSynchronize(0, s))
	assert.Equal(t, 4, runs, "uncaptured, it runs as any work")
}

// nodeTypes is the type of each node of g on device 0.
func nodeTypes(t *testing.T, f *cudarttest.Fake, g cudart.Graph) []cudart.GraphNodeType {
	t.Helper()
	types, err := cudart.GraphNodeTypes(f, 0, g)
	require.NoError(t, err)
	return types
}

// toyRank is a rank of the toy's collective: its word and its stream.
type toyRank struct {
	p cudart.DevicePtr
	s cudart.Stream
}

// toyRanks makes a rank on each of the fake's 2 devices, its word set to
// 10 times its number plus 10 on its stream.
func toyRanks(t *testing.T, f *cudarttest.Fake) []*toyRank {
	var ranks []*toyRank
	for d := range 2 {
		p, s := bufferAndStream(t, f, d, 4)
		ranks = append(ranks, &toyRank{p, s})
		require.NoError(t, f.MemsetAsync(d, p, byte(10*(d+1)), 4, s))
	}
	return ranks
}

// allReduce is the toy collective's piece of rank d, named by its rank:
// the last rank reached sums every rank's word into each. It can run once
// every other rank's piece is queued.
func (y *toy) allReduce(ranks []*toyRank, d int) cudarttest.Work {
	run := func(a *cudarttest.Access) error {
		y.reach[d] = true
		for o, r := range ranks {
			if !y.reach[o] {
				if err := a.Wait(o, r.s, r); err != nil {
					return err
				}
			}
		}
		if y.done || len(y.reach) < len(ranks) {
			return nil
		}
		y.done = true
		var sum uint32
		for o, r := range ranks {
			word := make([]byte, 4)
			if err := a.On(o).Read(r.p, word); err != nil {
				return err
			}
			sum += binary.LittleEndian.Uint32(word)
		}
		for o, r := range ranks {
			if err := a.On(o).Write(r.p, binary.LittleEndian.AppendUint32(nil, sum)); err != nil {
				return err
			}
		}
		return nil
	}
	ready := func(p *cudarttest.Progress) bool {
		for o, r := range ranks {
			if o != d && !y.reach[o] && !p.Reaches(o, r.s, r, 1) {
				return false
			}
		}
		return true
	}
	return cudarttest.Work{Device: d, Stream: ranks[d].s, Call: "toyAllReduce", Run: run, Key: ranks[d], Ready: ready}
}

// checkSum checks that every rank's word is the sum of the words before.
func checkSum(t *testing.T, f *cudarttest.Fake, ranks []*toyRank) {
	t.Helper()
	for d, r := range ranks {
		out := make([]byte, 4)
		require.NoError(t, f.Memcpy(d, cudart.HostMem(out), cudart.DeviceMem(r.p, 4), cudart.DeviceToHost))
		assert.Equal(t, uint32(0x0a0a0a0a+0x14141414), binary.LittleEndian.Uint32(out), "device %d", d)
	}
}

// A collective queued as a piece on each device's stream, coordinated by
// the library as the Library documents: a synchronisation of one device
// runs the other device's earlier work, then the sum, written to both.
func TestLibraryCollectiveSpansDevices(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	y := attachToy(f)
	ranks := toyRanks(t, f)
	for d := range ranks {
		require.NoError(t, y.lib.Enqueue(y.allReduce(ranks, d)))
	}
	require.NoError(t, f.StreamSynchronize(0, ranks[0].s))
	assert.True(t, y.done, "synchronising device 0 ran the collective")
	for d, r := range ranks {
		require.NoError(t, f.StreamSynchronize(d, r.s))
	}
	checkSum(t, f, ranks)
	_, err := y.lib.StreamDevice(0, ranks[1].s)
	require.NoError(t, err)
	w := y.allReduce(ranks, 0)
	w.Stream = ranks[1].s
	require.ErrorIs(t, y.lib.Enqueue(w), cudart.ErrInvalidResourceHandle, "a stream of another device")
}

// A query runs a collective once every rank's piece is queued (Work.Ready),
// and nothing before: not the rank's own earlier work either.
func TestLibraryCollectiveRunsOnAQuery(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	y := attachToy(f)
	ranks := toyRanks(t, f)
	require.NoError(t, y.lib.Enqueue(y.allReduce(ranks, 0)))
	for range 3 {
		done, err := f.StreamQuery(0, ranks[0].s)
		require.NoError(t, err)
		assert.False(t, done, "rank 1's piece is not queued")
	}
	assert.False(t, y.done, "nothing ran")
	assert.Empty(t, y.reach, "nothing ran")
	done, err := f.StreamQuery(1, ranks[1].s)
	require.NoError(t, err)
	assert.False(t, done, "rank 1's memset, seen for the first time")
	require.NoError(t, y.lib.Enqueue(y.allReduce(ranks, 1)))
	done, err = f.StreamQuery(0, ranks[0].s)
	require.NoError(t, err)
	assert.True(t, done, "rank 0's stream, with both pieces queued")
	assert.True(t, y.done, "the query ran the collective")
	done, err = f.StreamQuery(1, ranks[1].s)
	require.NoError(t, err)
	assert.True(t, done, "rank 1's piece ran with rank 0's")
	checkSum(t, f, ranks)
}

// EnqueueAll queues a collective's pieces together, each checked as
// Enqueue checks it: one refused leaves the others queued.
func TestLibraryEnqueueAll(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	y := attachToy(f)
	ranks := toyRanks(t, f)
	bad := y.allReduce(ranks, 1)
	bad.Stream = ranks[0].s
	errs := y.lib.EnqueueAll(y.allReduce(ranks, 0), bad)
	require.Len(t, errs, 2)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], cudart.ErrInvalidResourceHandle, "a stream of another device")
	done, err := f.StreamQuery(0, ranks[0].s)
	require.NoError(t, err)
	assert.False(t, done, "rank 0's piece is queued, waiting for rank 1's")
	errs = y.lib.EnqueueAll(y.allReduce(ranks, 1))
	require.Len(t, errs, 1)
	require.NoError(t, errs[0])
	for d, r := range ranks {
		require.NoError(t, f.StreamSynchronize(d, r.s))
	}
	checkSum(t, f, ranks)
}

// Allocation tells a library what the driver tells it of an address: a
// cudaMalloc whole, and in virtual memory the one mapping of a cuMemCreate
// allocation that holds it, with its device and how it exports; nothing for
// mapped host memory or a reservation's unmapped addresses.
func TestLibraryAllocation(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	y := attachToy(f)
	p, _ := bufferAndStream(t, f, 1, 1000)
	a, ok := y.lib.Allocation(p.Add(999))
	require.True(t, ok, "the last byte of a cudaMalloc")
	assert.Equal(t, cudarttest.Allocation{Device: 1, Base: p, End: p.Add(1000)}, a)
	_, ok = y.lib.Allocation(p.Add(1000))
	assert.False(t, ok, "the byte after a cudaMalloc")

	va, err := f.MemAddressReserve(4*g, 0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.MemAddressFree(va, 4*g)) })
	plain, err := f.MemCreate(1, g)
	require.NoError(t, err)
	shared, err := f.MemCreateExportable(1, 2*g, cudart.HandleTypePOSIXFileDescriptor)
	require.NoError(t, err)
	require.NoError(t, f.MemMap(va, g, 0, plain))
	require.NoError(t, f.MemMap(va.Add(g), 2*g, 0, shared))
	require.NoError(t, f.MemRelease(plain))
	require.NoError(t, f.MemRelease(shared))
	t.Cleanup(func() { assert.NoError(t, f.MemUnmap(va, 3*g)) })
	a, ok = y.lib.Allocation(va.Add(g - 1))
	require.True(t, ok, "the first mapping")
	assert.Equal(t, cudarttest.Allocation{Device: 1, Base: va, End: va.Add(g), Physical: true}, a)
	a, ok = y.lib.Allocation(va.Add(g))
	require.True(t, ok, "the second mapping")
	assert.Equal(t, cudarttest.Allocation{Device: 1, Base: va.Add(g), End: va.Add(3 * g), Physical: true, HandleTypes: cudart.HandleTypePOSIXFileDescriptor}, a)
	_, ok = y.lib.Allocation(va.Add(3 * g))
	assert.False(t, ok, "the reservation's unmapped rest")

	host, err := f.HostAlloc(0, 4096, cudart.HostAllocMapped)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(host)) })
	alias, err := f.HostGetDevicePointer(0, host)
	require.NoError(t, err)
	_, ok = y.lib.Allocation(alias)
	assert.False(t, ok, "mapped host memory")
}
