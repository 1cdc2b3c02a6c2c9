package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/nccl/internal/fakenccl"
	"github.com/cudapool/cudapool/vmem"
)

// testWindows: windows (ncclCommWindowRegister), on a library that has them
// and a runtime with virtual memory.
//
//   - Arena: every rank's vmem Arena made exportable as a POSIX file
//     descriptor (vmem.WithHandleTypes) registers as a window on every
//     rank, in one group (RegisterWindows, WindowCollSymmetric) or each
//     on its goroutine (RegisterWindow, WindowDefault), and an all-reduce
//     from one half of the windows into the other sums every rank's
//     values; each window deregisters. What the windows took of each
//     device's free memory is logged ("nccl window charge:"), and asserted
//     within [½, 2] of the fake's fakenccl.SymmetricWindowCharge or
//     WindowCharge at the registration, and below half of it at the first
//     all-reduce (0 B measured); what the deregistration gave back is
//     logged, not asserted (not measured: the fake gives it back at the
//     communicator's destroy).
//
// The rest needs GPUs that all reach each other (cudaDeviceCanAccessPeer),
// where NCCL 2.28 makes windows symmetric memory (its symmetricSupport);
// elsewhere it registers them locally, and they are skipped.
//
//   - CudaMalloc: memory from cudaMalloc as every rank's window fails the
//     registration with ncclUnhandledCudaError, every communicator failed
//     after: NCCL's cuMemRetainAllocationHandle refuses memory that is not
//     from cuMemCreate (ncclDevrWindowRegisterInGroup, dev_runtime.cc).
//   - Misaligned: a window 256 B into its cuMemCreate allocation fails
//     with ncclInvalidArgument ("Window address must be suitably
//     aligned."), every communicator failed after.
//   - NotExportable: an Arena whose memory cannot be exported leaves the
//     registration in progress until the bound (ErrTimeout): NCCL's proxy
//     thread fails to export it for the peers and never answers them
//     (proxyGetFd, proxy.cc).
func (s *suite) testWindows(t *testing.T) {
	if !s.lib.HasWindows() {
		v, _ := s.lib.Version()
		t.Skipf("NCCL %s has no windows (2.27 and later)", v)
	}
	vm, ok := s.rt.(cudart.VirtualMemory)
	if !ok {
		t.Skip("the runtime has no virtual memory (cudart.VirtualMemory)")
	}
	t.Run("Arena", func(t *testing.T) {
		for _, grouped := range []bool{true, false} {
			name := map[bool]string{true: "Group", false: "Goroutines"}[grouped]
			t.Run(name, func(t *testing.T) { s.windowAllReduce(t, vm, grouped) })
		}
	})
	if why := s.notAllPeers(); why != "" {
		t.Logf("%s: NCCL registers windows locally, and the refusals are not checked", why)
		return
	}
	refused := func(t *testing.T, bufs func(w *world, bases []cudart.DevicePtr) []cudart.DevicePtr, size uint64, want error) {
		w := newWorld(t, s.rt, s.lib, s.devs, 8)
		bases := s.windowArenas(t, vm, true)
		_, err := s.lib.RegisterWindows(w.comms, bufs(w, bases), size, nccl.WindowDefault)
		t.Logf("RegisterWindows: %v", err)
		require.ErrorIs(t, err, want, "RegisterWindows")
		for r, c := range w.comms {
			assert.ErrorIs(t, c.AsyncError(), want, "rank %d's communicator after", r)
		}
	}
	t.Run("CudaMalloc", func(t *testing.T) {
		refused(t, func(w *world, _ []cudart.DevicePtr) []cudart.DevicePtr { return w.send }, 8, nccl.ErrUnhandledCudaError)
	})
	t.Run("Misaligned", func(t *testing.T) {
		refused(t, func(_ *world, bases []cudart.DevicePtr) []cudart.DevicePtr {
			out := make([]cudart.DevicePtr, len(bases))
			for r, b := range bases {
				out[r] = b.Add(256)
			}
			return out
		}, nccl.WindowAlignment, nccl.ErrInvalidArgument)
	})
	t.Run("NotExportable", func(t *testing.T) {
		const bound = time.Second
		w := newWorld(t, s.rt, s.lib, s.devs, 8, nccl.WithTimeout(bound))
		bases := s.windowArenas(t, vm, false)
		start := time.Now()
		_, err := s.lib.RegisterWindows(w.comms, bases, windowBytes(t, vm, s.devs[0], false), nccl.WindowDefault)
		took := time.Since(start)
		t.Logf("RegisterWindows: %v, after %v", err, took)
		require.ErrorIs(t, err, nccl.ErrTimeout, "RegisterWindows")
		assert.Less(t, took, bound+nccl.AbortWait+time.Second, "the abort after the bound")
	})
}

// windowBytes is a window of the suite: the recommended granularity of
// device's memory (exportable as a file descriptor, or not), which is
// one growth of an arena.
func windowBytes(t *testing.T, vm cudart.VirtualMemory, device int, exportable bool) uint64 {
	t.Helper()
	var g uint64
	var err error
	if exportable {
		g, err = vm.MemGetExportableGranularity(device, cudart.HandleTypePOSIXFileDescriptor, true)
	} else {
		g, err = vm.MemGetAllocationGranularity(device, true)
	}
	require.NoError(t, err, "the granularity of device %d", device)
	return g
}

// windowArenas makes a vmem Arena on each device with one window's size
// mapped in one growth, exportable as a file descriptor or not, closed at
// cleanup, and returns their bases.
func (s *suite) windowArenas(t *testing.T, vm cudart.VirtualMemory, exportable bool) []cudart.DevicePtr {
	t.Helper()
	size := windowBytes(t, vm, s.devs[0], exportable)
	var opts []vmem.Option
	if exportable {
		opts = append(opts, vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor))
	}
	bases := make([]cudart.DevicePtr, len(s.devs))
	for r, d := range s.devs {
		a, err := vmem.NewArena(vm, d, size, opts...)
		require.NoError(t, err, "NewArena on device %d", d)
		t.Cleanup(func() { require.NoError(t, a.Close(), "Arena Close") })
		require.NoError(t, a.Ensure(size), "Ensure on device %d", d)
		bases[r] = a.Base()
	}
	return bases
}

// windowAllReduce registers an exportable arena of every rank as a window,
// in one group or on a goroutine each, sums one half of the windows into
// the other with an all-reduce, checks every rank's result, logs the
// device memory the windows took, and deregisters them.
func (s *suite) windowAllReduce(t *testing.T, vm cudart.VirtualMemory, grouped bool) {
	w := newWorld(t, s.rt, s.lib, s.devs, 8)
	n := w.n()
	size := windowBytes(t, vm, s.devs[0], true)
	bases := s.windowArenas(t, vm, true)
	// A first all-reduce first, so that what it takes is not counted.
	var warm []nccl.Op
	for r := range n {
		warm = append(warm, w.comms[r].AllReduceOp(w.send[r], w.recv[r], 1, nccl.Int32, nccl.Sum, w.s[r]))
	}
	require.NoError(t, s.lib.Group(warm...), "a first AllReduce")
	w.sync(t)
	free := s.freeMemory(t)
	ws := make([]*nccl.Window, n)
	if grouped {
		var err error
		ws, err = s.lib.RegisterWindows(w.comms, bases, size, nccl.WindowCollSymmetric)
		require.NoError(t, err, "RegisterWindows")
	} else {
		errs := make([]error, n)
		onRanks(n, func(r int) { ws[r], errs[r] = w.comms[r].RegisterWindow(bases[r], size, nccl.WindowDefault) })
		for r := range n {
			require.NoError(t, errs[r], "RegisterWindow on rank %d", r)
		}
	}
	registered := s.freeMemory(t)
	half := size / 2
	elems := min(uint64(count), half/4)
	in := make([][]float64, n)
	var group []nccl.Op
	for r := range n {
		var b []byte
		b, in[r] = values(uint64(70+r), elems, nccl.Int32)
		w.put(t, r, bases[r], b)
		group = append(group, w.comms[r].AllReduceOp(bases[r], bases[r].Add(half), elems, nccl.Int32, nccl.Sum, w.s[r]))
	}
	require.NoError(t, s.lib.Group(group...), "AllReduce between the windows' halves")
	w.sync(t)
	after := s.freeMemory(t)
	flags := map[bool]nccl.WindowFlags{true: nccl.WindowCollSymmetric, false: nccl.WindowDefault}[grouped]
	for r, d := range s.devs {
		t.Logf("nccl window charge: device %d, a window of %d B (%s): %d B at its registration, %d B more at its first all-reduce",
			d, size, flags, int64(free[r])-int64(registered[r]), int64(registered[r])-int64(after[r]))
	}
	want := int64(fakenccl.WindowCharge)
	if grouped {
		want = fakenccl.SymmetricWindowCharge
	}
	for r, d := range s.devs {
		took, more := int64(free[r])-int64(registered[r]), int64(registered[r])-int64(after[r])
		assert.True(t, took >= want/2 && took <= 2*want,
			"device %d: the window (%s) took %d B (%s) at its registration, not within [½, 2] of the fake's %s", d, flags, took, signed(took), bytesize.Exact(uint64(want)))
		assert.True(t, more < want/2,
			"device %d: the window's first all-reduce took %d B (%s) more, not below half of its registration's %s (0 B measured)", d, more, signed(more), bytesize.Exact(uint64(want)))
	}
	for r := range n {
		got := w.get(t, r, bases[r].Add(half), elems*4)
		for i := range elems {
			want := 0.0
			for q := range n {
				want += in[q][i]
			}
			require.Equal(t, want, decode(got, i, nccl.Int32), "rank %d element %d", r, i)
		}
	}
	for r, win := range ws {
		require.NoError(t, win.Deregister(), "Deregister rank %d's window", r)
		require.NoError(t, win.Deregister(), "Deregister rank %d's window again", r)
		require.NoError(t, w.comms[r].AsyncError(), "rank %d's communicator after", r)
	}
	back := s.freeMemory(t)
	for r, d := range s.devs {
		t.Logf("nccl window charge: device %d, a window of %d B (%s): %d B given back at its deregistration", d, size, flags, int64(back[r])-int64(after[r]))
	}
}

// freeMemory is each device's free memory (cudaMemGetInfo).
func (s *suite) freeMemory(t *testing.T) []uint64 {
	t.Helper()
	fs := make([]uint64, len(s.devs))
	for r, d := range s.devs {
		f, _, err := s.rt.MemGetInfo(d)
		require.NoError(t, err, "cudaMemGetInfo on device %d", d)
		fs[r] = f
	}
	return fs
}

// notAllPeers says which two devices cannot access each other's memory,
// "" when every pair can.
func (s *suite) notAllPeers() string {
	dev, ok := s.rt.(cudart.Device)
	if !ok {
		return "the runtime does not tell peer access (cudart.Device)"
	}
	for _, a := range s.devs {
		for _, b := range s.devs {
			if a == b {
				continue
			}
			if can, err := dev.DeviceCanAccessPeer(a, b); err != nil || !can {
				return fmt.Sprintf("device %d cannot access device %d's memory (%v)", a, b, err)
			}
		}
	}
	return ""
}
