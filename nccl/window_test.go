package nccl_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/vmem"
)

// winSize is a window of the tests: two granules of the fake, one growth.
const winSize = 4 << 20

// arenas makes an arena on each of n devices of f, with winSize mapped in
// one growth, closed at cleanup; exportable as a file descriptor unless
// opts say otherwise.
func arenas(t *testing.T, f *cudarttest.Fake, n int, opts ...vmem.Option) []cudart.DevicePtr {
	t.Helper()
	if opts == nil {
		opts = []vmem.Option{vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor)}
	}
	bases := make([]cudart.DevicePtr, n)
	for d := range n {
		a, err := vmem.NewArena(f, d, 2*winSize, opts...)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, a.Close()) })
		require.NoError(t, a.Ensure(winSize))
		bases[d] = a.Base()
	}
	return bases
}

// putU64 and getU64 write and read one uint64 at p on device.
func putU64(t *testing.T, f *cudarttest.Fake, device int, p cudart.DevicePtr, v uint64) {
	t.Helper()
	b := binary.LittleEndian.AppendUint64(nil, v)
	require.NoError(t, f.Memcpy(device, cudart.DeviceMem(p, 8), cudart.HostMem(b), cudart.HostToDevice))
}

func getU64(t *testing.T, f *cudarttest.Fake, device int, p cudart.DevicePtr) uint64 {
	t.Helper()
	b := make([]byte, 8)
	require.NoError(t, f.Memcpy(device, cudart.HostMem(b), cudart.DeviceMem(p, 8), cudart.DeviceToHost))
	return binary.LittleEndian.Uint64(b)
}

// Every rank registers an exportable arena as a window, in one group or
// each on its goroutine, and an all-reduce between two halves of the
// windows sums the ranks' values; a window deregisters once, and again as
// a no-op.
func TestWindowsOfExportableArenas(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, how := range []string{"group", "goroutines"} {
			t.Run(fmt.Sprintf("%d-devices/%s", n, how), func(t *testing.T) {
				r := newRig(t, n, 8)
				bases := arenas(t, r.fake, n)
				ws := make([]*nccl.Window, n)
				if how == "group" {
					var err error
					ws, err = r.lib.RegisterWindows(r.comms, bases, winSize, nccl.WindowCollSymmetric)
					require.NoError(t, err)
				} else {
					errs := make([]error, n)
					ranks(n, func(d int) { ws[d], errs[d] = r.comms[d].RegisterWindow(bases[d], winSize, nccl.WindowCollSymmetric) })
					for d := range n {
						require.NoError(t, errs[d], "rank %d", d)
					}
				}
				var ops []nccl.Op
				for d := range n {
					putU64(t, r.fake, d, bases[d], uint64(d+1))
					ops = append(ops, r.comms[d].AllReduceOp(bases[d], bases[d].Add(winSize/2), 1, nccl.Uint64, nccl.Sum, r.s[d]))
				}
				require.NoError(t, r.lib.Group(ops...))
				for d := range n {
					require.NoError(t, r.fake.StreamSynchronize(d, r.s[d]))
					assert.Equal(t, uint64(n*(n+1)/2), getU64(t, r.fake, d, bases[d].Add(winSize/2)), "rank %d", d)
				}
				for d, w := range ws {
					require.NoError(t, w.Deregister(), "rank %d", d)
					require.NoError(t, w.Deregister(), "rank %d, again", d)
					require.NoError(t, r.comms[d].AsyncError())
				}
			})
		}
	}
}

// Blocking communicators register windows too, their calls returning once
// every rank has.
func TestWindowsOfBlockingCommunicators(t *testing.T) {
	f, lib := openFake(t, 2)
	comms, err := lib.InitAll([]int{0, 1}, nccl.WithInlineLaunch())
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			assert.NoError(t, c.Destroy())
		}
	})
	ws, err := lib.RegisterWindows(comms, arenas(t, f, 2), winSize, nccl.WindowDefault)
	require.NoError(t, err)
	for _, w := range ws {
		require.NoError(t, w.Deregister())
	}
}

// What NCCL 2.28 refuses of a window, or the fake refuses where NCCL's
// result is undefined, fails every rank of the group with NCCL's result,
// and the communicators with it.
func TestWindowsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bufs  func(r *rig, bases []cudart.DevicePtr) []cudart.DevicePtr
		size  uint64
		flags nccl.WindowFlags
		want  error
		text  string
	}{
		{"cudaMalloc's memory", func(r *rig, _ []cudart.DevicePtr) []cudart.DevicePtr { return r.a }, 8, 0, nccl.ErrUnhandledCudaError, "cuMemRetainAllocationHandle"},
		{"misaligned", func(_ *rig, bases []cudart.DevicePtr) []cudart.DevicePtr {
			return []cudart.DevicePtr{bases[0].Add(256), bases[1].Add(256)}
		}, 4096, 0, nccl.ErrInvalidArgument, "Window address must be suitably aligned"},
		{"past its allocation", func(_ *rig, bases []cudart.DevicePtr) []cudart.DevicePtr { return bases }, 2 * winSize, 0, nccl.ErrInvalidArgument, "runs past the cuMemCreate allocation"},
		{"another device's memory", func(_ *rig, bases []cudart.DevicePtr) []cudart.DevicePtr {
			return []cudart.DevicePtr{bases[1], bases[0]}
		}, winSize, 0, nccl.ErrInvalidArgument, "is on device 1, the communicator on device 0"},
		{"unknown flags", func(_ *rig, bases []cudart.DevicePtr) []cudart.DevicePtr { return bases }, winSize, 4, nccl.ErrInvalidArgument, "window flags 0x4"},
		{"not device memory", func(*rig, []cudart.DevicePtr) []cudart.DevicePtr { return []cudart.DevicePtr{0x1000, 0x1000} }, winSize, 0, nccl.ErrUnhandledCudaError, "cuMemGetAddressRange"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2, 8)
			bases := arenas(t, r.fake, 2)
			_, err := r.lib.RegisterWindows(r.comms, tc.bufs(r, bases), tc.size, tc.flags)
			require.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, tc.text)
			for d, c := range r.comms {
				assert.ErrorIs(t, c.AsyncError(), tc.want, "rank %d's communicator is failed", d)
			}
		})
	}
}

// Ranks whose windows disagree (in size, flags, offset into their
// allocation, or the allocation's size) fail together with
// ncclInvalidUsage, as collectives that disagree do.
func TestWindowsThatDisagreeFailEveryRank(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size1, off1 uint64
		flags1      nccl.WindowFlags
		grow1       uint64
		text        string
	}{
		{"size", winSize / 2, 0, 0, 0, "registers"},
		{"flags", winSize / 2, 0, nccl.WindowCollSymmetric, winSize, "with flags"},
		{"offset", winSize / 2, 4096, 0, winSize, "B into its allocation"},
		{"allocation", winSize / 2, 0, 0, 2 * winSize, "in an allocation of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2, 8)
			f := r.fake
			a0, err := vmem.NewArena(f, 0, 2*winSize, vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor))
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, a0.Close()) })
			require.NoError(t, a0.Ensure(winSize))
			a1, err := vmem.NewArena(f, 1, 2*winSize, vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor))
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, a1.Close()) })
			require.NoError(t, a1.Ensure(max(tc.grow1, winSize)))
			size0 := uint64(winSize / 2)
			if tc.name == "size" {
				size0 = winSize
			}
			errs := make([]error, 2)
			ranks(2, func(d int) {
				if d == 0 {
					_, errs[0] = r.comms[0].RegisterWindow(a0.Base(), size0, nccl.WindowDefault)
				} else {
					_, errs[1] = r.comms[1].RegisterWindow(a1.Base().Add(tc.off1), tc.size1, tc.flags1)
				}
			})
			for d, err := range errs {
				require.ErrorIs(t, err, nccl.ErrInvalidUsage, "rank %d", d)
				assert.ErrorContains(t, err, "window #1 of the communicator differs between ranks", "rank %d", d)
				assert.ErrorContains(t, err, tc.text, "rank %d", d)
			}
		})
	}
}

// Memory from cuMemCreate that cannot be exported as a file descriptor
// leaves every rank waiting for the others' export, as NCCL 2.28's proxy
// thread fails it without answering: the registration ends with the bound,
// the communicators aborted. So does a rank that never registers.
func TestWindowsThatNeverCompleteTimeOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []vmem.Option
		ranks int
	}{
		{"not exportable", []vmem.Option{vmem.WithChunk(2 << 20)}, 2},
		{"a rank missing", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, lib := openFake(t, 2)
			const bound = 100 * time.Millisecond
			comms, err := lib.InitAll([]int{0, 1}, nccl.WithTimeout(bound))
			require.NoError(t, err)
			t.Cleanup(func() {
				for _, c := range comms {
					assert.NoError(t, c.Destroy())
				}
			})
			bases := arenas(t, f, 2, tc.opts...)
			start := time.Now()
			_, err = lib.RegisterWindows(comms[:tc.ranks], bases[:tc.ranks], winSize, nccl.WindowDefault)
			require.ErrorIs(t, err, nccl.ErrTimeout)
			assert.Less(t, time.Since(start), bound+nccl.AbortWait)
			assert.ErrorIs(t, comms[0].AllReduce(bases[0], bases[0], 1, nccl.Float32, nccl.Sum, 0), nccl.ErrClosed, "aborted")
		})
	}
}

// The binding refuses what it cannot register before NCCL sees it; a
// closed communicator's windows are gone with it.
func TestRegisterWindowsArguments(t *testing.T) {
	r := newRig(t, 2, 8)
	bases := arenas(t, r.fake, 2)
	for _, tc := range []struct {
		name  string
		comms []*nccl.Comm
		ptrs  []cudart.DevicePtr
		size  uint64
	}{
		{"no communicators", nil, nil, winSize},
		{"a buffer short", r.comms, bases[:1], winSize},
		{"0 B", r.comms, bases, 0},
		{"a communicator twice", []*nccl.Comm{r.comms[0], r.comms[0]}, bases, winSize},
		{"a nil communicator", []*nccl.Comm{r.comms[0], nil}, bases, winSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.lib.RegisterWindows(tc.comms, tc.ptrs, tc.size, nccl.WindowDefault)
			assert.ErrorIs(t, err, nccl.ErrInvalidOption)
		})
	}
	ws, err := r.lib.RegisterWindows(r.comms, bases, winSize, nccl.WindowDefault)
	require.NoError(t, err)
	require.NoError(t, r.comms[0].Abort())
	assert.NoError(t, ws[0].Deregister(), "the window went with its communicator")
	_, err = r.comms[0].RegisterWindow(bases[0], winSize, nccl.WindowDefault)
	assert.ErrorIs(t, err, nccl.ErrClosed)
	assert.NoError(t, ws[1].Deregister())
}
