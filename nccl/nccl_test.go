package nccl_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/nccl/internal/fakenccl"
)

// rig is a fake of n devices with a communicator (made with opts), a
// stream and two buffers of size bytes on each.
type rig struct {
	fake  *cudarttest.Fake
	lib   *nccl.Library
	comms []*nccl.Comm
	s     []cudart.Stream
	a, b  []cudart.DevicePtr
}

func newRig(t testing.TB, n int, size uint64, opts ...nccl.CommOption) *rig {
	t.Helper()
	f, lib := openFake(t, n)
	comms, err := lib.InitAll(devices(n), opts...)
	require.NoError(t, err)
	r := &rig{fake: f, lib: lib, comms: comms}
	for d := range n {
		s, err := f.StreamCreate(d)
		require.NoError(t, err)
		a, err := f.Malloc(d, size)
		require.NoError(t, err)
		b, err := f.Malloc(d, size)
		require.NoError(t, err)
		r.s, r.a, r.b = append(r.s, s), append(r.a, a), append(r.b, b)
	}
	t.Cleanup(func() {
		for d := range n {
			assert.NoError(t, comms[d].Destroy())
			assert.NoError(t, f.Free(d, r.a[d]))
			assert.NoError(t, f.Free(d, r.b[d]))
			assert.NoError(t, f.StreamDestroy(d, r.s[d]))
		}
	})
	return r
}

// openFake is NCCL opened on a fake of n devices, which fails t at cleanup
// if anything is left.
func openFake(t testing.TB, n int) (*cudarttest.Fake, *nccl.Library) {
	t.Helper()
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(n))
	lib, err := nccl.Open(f)
	require.NoError(t, err)
	return f, lib
}

// devices is the first n devices' indices, 0 to n-1.
func devices(n int) []int {
	ds := make([]int, n)
	for d := range ds {
		ds[d] = d
	}
	return ds
}

// streamsAndBuffers makes a stream and a buffer of size bytes on each of
// the first n devices.
func streamsAndBuffers(t *testing.T, f *cudarttest.Fake, n int, size uint64) ([]cudart.Stream, []cudart.DevicePtr) {
	t.Helper()
	s := make([]cudart.Stream, n)
	p := make([]cudart.DevicePtr, n)
	for d := range n {
		var err error
		s[d], err = f.StreamCreate(d)
		require.NoError(t, err)
		p[d], err = f.Malloc(d, size)
		require.NoError(t, err)
	}
	return s, p
}

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ranks runs fn for every rank in a goroutine of its own, and waits.
func ranks(n int, fn func(r int)) {
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { fn(r) })
	}
	wg.Wait()
}

func TestAllReduceOnGoroutines(t *testing.T) {
	r := newRig(t, 2, 16)
	for d := range 2 {
		require.NoError(t, r.fake.Memcpy(d, cudart.DeviceMem(r.a[d], 16), cudart.HostMem(f32s(1, 2, 3, float32(d))), cudart.HostToDevice))
	}
	errs := make([]error, 2)
	ranks(2, func(d int) {
		errs[d] = r.comms[d].AllReduce(r.a[d], r.b[d], 4, nccl.Float32, nccl.Sum, r.s[d])
	})
	for d := range 2 {
		require.NoError(t, errs[d])
		require.NoError(t, r.fake.StreamSynchronize(d, r.s[d]))
		got := make([]byte, 16)
		require.NoError(t, r.fake.Memcpy(d, cudart.HostMem(got), cudart.DeviceMem(r.b[d], 16), cudart.DeviceToHost))
		assert.Equal(t, f32s(2, 4, 6, 1), got, "rank %d", d)
	}
}

func TestGroupDrivesEveryDeviceFromOneGoroutine(t *testing.T) {
	r := newRig(t, 4, 8)
	var ops []nccl.Op
	for d := range 4 {
		v := make([]byte, 8)
		binary.LittleEndian.PutUint64(v, uint64(d+1))
		require.NoError(t, r.fake.Memcpy(d, cudart.DeviceMem(r.a[d], 8), cudart.HostMem(v), cudart.HostToDevice))
		ops = append(ops, r.comms[d].AllReduceOp(r.a[d], r.a[d], 1, nccl.Int64, nccl.Prod, r.s[d]))
	}
	require.NoError(t, r.lib.Group(ops...))
	for d := range 4 {
		require.NoError(t, r.fake.StreamSynchronize(d, r.s[d]))
		got := make([]byte, 8)
		require.NoError(t, r.fake.Memcpy(d, cudart.HostMem(got), cudart.DeviceMem(r.a[d], 8), cudart.DeviceToHost))
		assert.Equal(t, uint64(24), binary.LittleEndian.Uint64(got), "rank %d: 1·2·3·4 in place", d)
	}
}

// A group queues every rank's part before another goroutine's
// synchronisation of one rank's device can see it: a GPU's kernel of the
// collective would wait for its peer's, launched by the same group end, so
// a synchronisation of rank 0's device in between must not fault it.
func TestGroupIsQueuedOnEveryDeviceAtOnce(t *testing.T) {
	r := newRig(t, 2, 8)
	ops := []nccl.Op{
		r.comms[0].AllReduceOp(r.a[0], r.a[0], 1, nccl.Int64, nccl.Sum, r.s[0]),
		r.comms[1].AllReduceOp(r.a[1], r.a[1], 1, nccl.Int64, nccl.Sum, r.s[1]),
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				assert.NoError(t, r.fake.DeviceSynchronize(0))
			}
		}
	})
	for range 2000 {
		if !assert.NoError(t, r.lib.Group(ops...)) {
			break
		}
	}
	close(stop)
	wg.Wait()
	for d := range 2 {
		assert.NoError(t, r.fake.StreamSynchronize(d, r.s[d]), "rank %d", d)
	}
}

func TestMismatchFailsEveryRankAtOnce(t *testing.T) {
	r := newRig(t, 2, 16)
	errs := make([]error, 2)
	ranks(2, func(d int) {
		if d == 0 {
			errs[d] = r.comms[d].AllReduce(r.a[d], r.b[d], 4, nccl.Float32, nccl.Sum, r.s[d])
		} else {
			errs[d] = r.comms[d].AllReduce(r.a[d], r.b[d], 3, nccl.Float32, nccl.Sum, r.s[d])
		}
	})
	for d := range 2 {
		require.ErrorIs(t, errs[d], nccl.ErrInvalidUsage, "rank %d", d)
		assert.Contains(t, errs[d].Error(), "collective #1 of the communicator differs between ranks")
		assert.Contains(t, errs[d].Error(), "count 3")
	}
}

func TestMissingRankTimesOutAndAborts(t *testing.T) {
	f, lib := openFake(t, 2)
	id, err := lib.UniqueID()
	require.NoError(t, err)
	_, err = lib.InitRank(0, id, 2, 0, nccl.WithTimeout(20e6))
	require.ErrorIs(t, err, nccl.ErrTimeout)
	assert.Contains(t, err.Error(), "rank 0 of 2 on device 0")
	free, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	_, total, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, total, free, "the aborted communicator holds no memory")
}

// TestCommunicatorsChargeWhatNCCLTakes: the fake charges its constants
// exactly, stage by stage, where the conformance group's Charge asserts a
// range that a GPU's figures must fall in too.
func TestCommunicatorsChargeWhatNCCLTakes(t *testing.T) {
	f, lib := openFake(t, 2)
	s, p := streamsAndBuffers(t, f, 2, 4)
	used := func() uint64 {
		free, total, err := f.MemGetInfo(1)
		require.NoError(t, err)
		return total - free
	}
	allReduce := func(comms []*nccl.Comm) {
		require.NoError(t, lib.Group(comms[0].AllReduceOp(p[0], p[0], 1, nccl.Int32, nccl.Sum, s[0]), comms[1].AllReduceOp(p[1], p[1], 1, nccl.Int32, nccl.Sum, s[1])))
	}
	base := used()
	took := func() uint64 { return used() - base }
	comms, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	first := uint64(fakenccl.InitCharge)
	assert.Equal(t, first, took(), "init")
	allReduce(comms)
	first += fakenccl.FirstCharge
	assert.Equal(t, first, took(), "first collective")
	more, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	assert.Equal(t, first+fakenccl.FurtherInitCharge, took(), "a further communicator's init")
	allReduce(more)
	further := uint64(fakenccl.FurtherInitCharge + fakenccl.FurtherFirstCharge)
	assert.Equal(t, first+further, took(), "a further communicator's first collective")
	kids := make([]*nccl.Comm, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			var err error
			kids[r], err = comms[r].Split(0, r)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	require.NotNil(t, kids[0])
	require.NotNil(t, kids[1])
	assert.Equal(t, first+further+fakenccl.SplitCharge, took(), "a split")
	allReduce(kids)
	assert.Equal(t, first+further+fakenccl.SplitCharge+fakenccl.FurtherFirstCharge, took(), "a split's first collective")
	for _, cs := range [][]*nccl.Comm{kids, more, comms} {
		for d := range 2 {
			require.NoError(t, cs[d].Destroy())
			require.NoError(t, cs[d].Destroy(), "Destroy is idempotent")
		}
	}
	assert.Equal(t, uint64(fakenccl.KeptCharge), took(), "destroyed communicators give their memory back but what NCCL keeps in the context")
	again, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	allReduce(again)
	assert.Equal(t, fakenccl.KeptCharge+further, took(), "a communicator made after every other was destroyed: a further one, NCCL's part kept from the first")
	for d := range 2 {
		require.NoError(t, again[d].Destroy())
	}
	require.ErrorIs(t, comms[0].AllReduce(p[0], p[0], 1, nccl.Int32, nccl.Sum, s[0]), nccl.ErrClosed)
	for d := range 2 {
		require.NoError(t, f.Free(d, p[d]))
		require.NoError(t, f.StreamDestroy(d, s[d]))
	}
	require.NoError(t, f.DeviceReset(1))
	assert.Zero(t, used(), "a reset ends the context, with what NCCL kept in it")
}

func TestBadArgumentsFailTheCommunicator(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(r *rig) error
	}{
		{"root past the ranks", func(r *rig) error { return r.comms[0].Broadcast(r.a[0], r.b[0], 1, nccl.Float32, 2, r.s[0]) }},
		{"negative root", func(r *rig) error { return r.comms[0].Reduce(r.a[0], r.b[0], 1, nccl.Float32, nccl.Sum, -1, r.s[0]) }},
		{"unknown type", func(r *rig) error {
			return r.comms[0].AllReduce(r.a[0], r.b[0], 1, nccl.DataType(12), nccl.Sum, r.s[0])
		}},
		{"unknown op", func(r *rig) error {
			return r.comms[0].AllReduce(r.a[0], r.b[0], 1, nccl.Float32, nccl.RedOp(5), r.s[0])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2, 16)
			err := tc.call(r)
			require.ErrorIs(t, err, nccl.ErrInvalidArgument)
			var e *nccl.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "ncclInvalidArgument", e.Name)
			assert.NotEmpty(t, e.Last, "NCCL's last error")
			assert.NotContains(t, err.Error(), "NCCL_DEBUG", "the fake writes no NCCL log to look in")
			// NCCL sets a non-blocking communicator's error: it is of no
			// more use, and Destroy aborts it.
			require.ErrorIs(t, r.comms[0].AsyncError(), nccl.ErrInvalidArgument)
			require.NoError(t, r.comms[1].AsyncError())
		})
	}
}

// TestFailCallFailsAnNCCLCall: FailCall takes NCCL's call names once
// nccl.Open attached the fake's NCCL, and the call returns the result given.
func TestFailCallFailsAnNCCLCall(t *testing.T) {
	r := newRig(t, 2, 16)
	const invalidUsage = 5 // ncclInvalidUsage
	require.NoError(t, r.fake.FailCall("ncclAllReduce", cudart.Code(invalidUsage)))
	err := r.comms[0].AllReduce(r.a[0], r.b[0], 4, nccl.Float32, nccl.Sum, r.s[0])
	require.ErrorIs(t, err, nccl.ErrInvalidUsage)
	assert.Contains(t, err.Error(), "ncclAllReduce: injected by FailCall")
}

// BenchmarkGroupAllReduce times the call tp's -bench-allreduce and
// cref/allreduce.c make: one goroutine posts a group of one all-reduce a
// rank over 4 fake devices and waits for all of them. Its allocations are
// the binding's and the fake's; on a GPU only the binding's remain
// (BenchmarkGroupOverhead times the binding alone). The streams are
// synchronised, untimed, every syncEvery groups: the fake runs a
// stream's pieces one inside another, as deep as the work queued.
func BenchmarkGroupAllReduce(b *testing.B) {
	const n, syncEvery = 4, 1024
	r := newRig(b, n, 16)
	ops := make([]nccl.Op, n)
	for d := range n {
		ops[d] = r.comms[d].AllReduceOp(r.a[d], r.b[d], 4, nccl.Float32, nccl.Sum, r.s[d])
	}
	sync := func() {
		for d := range n {
			require.NoError(b, r.fake.StreamSynchronize(d, r.s[d]))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := r.lib.Group(ops...); err != nil {
			b.Fatal(err)
		}
		if i%syncEvery == syncEvery-1 {
			b.StopTimer()
			sync()
			b.StartTimer()
		}
	}
	b.StopTimer()
	sync()
}

// TestCommStringNamesTheCommunicator: a communicator's name tells two
// cliques' ranks apart, and the ranks of one InitAll are numbered in a
// row.
func TestCommStringNamesTheCommunicator(t *testing.T) {
	r := newRig(t, 2, 16)
	more, err := r.lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range more {
			assert.NoError(t, c.Destroy())
		}
	})
	var first, second int
	_, err = fmt.Sscanf(r.comms[0].String(), "comm %d: rank 0 of 2 on device 0", &first)
	require.NoError(t, err, r.comms[0].String())
	_, err = fmt.Sscanf(more[1].String(), "comm %d: rank 1 of 2 on device 1", &second)
	require.NoError(t, err, more[1].String())
	assert.Equal(t, fmt.Sprintf("comm %d: rank 1 of 2 on device 1", first+1), r.comms[1].String())
	assert.Greater(t, second, first+1, "a second clique's rank 1")
}

// TestLeakNamesTheBindingCall: the fake's leak listing names the binding's
// call that made a communicator left live.
func TestLeakNamesTheBindingCall(t *testing.T) {
	f := cudarttest.NewFake(cudarttest.WithDevices(2))
	lib, err := nccl.Open(f)
	require.NoError(t, err)
	comms, err := lib.InitAll([]int{0, 1})
	require.NoError(t, err)
	leaks := f.CheckLeaks()
	require.Error(t, leaks)
	assert.Contains(t, leaks.Error(), "NCCL communicator")
	assert.Contains(t, leaks.Error(), "from ncclCommInitRankConfig (nccl.Library.InitAll or InitRank), after ")
	assert.NotContains(t, leaks.Error(), "after call #")
	for _, c := range comms {
		require.NoError(t, c.Destroy())
	}
}
