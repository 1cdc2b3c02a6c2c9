package cublas_test

import (
	"context"
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// gemmLayout is a GEMM's operands: the matrix A shared, B and C per request,
// all n×n FP32.
type gemmLayout struct {
	shared, req *pool.Profile
	a, b, c     pool.Ref
}

func newGemmLayout(t testing.TB, n uint64) *gemmLayout {
	t.Helper()
	l := &gemmLayout{shared: pool.NewProfile("weights"), req: pool.NewProfile("request")}
	var err error
	l.a, err = l.shared.Device(4*n*n, pool.Name("a"))
	require.NoError(t, err)
	l.b, err = l.req.Device(4*n*n, pool.Name("b"))
	require.NoError(t, err)
	l.c, err = l.req.Device(4*n*n, pool.Name("c"))
	require.NoError(t, err)
	return l
}

// slots is the layout of slots that serve l's GEMM, each with a handle of
// lib and a workspace of workspace bytes (0: the default).
func (l *gemmLayout) slots(lib *cublas.Library, workspace uint64) pool.SlotLayout {
	return pool.SlotLayout{Shared: l.shared, Profiles: []*pool.Profile{l.req}, Attach: []pool.Attachment{lib.ForSlots(workspace)}}
}

// acquireLent acquires a slot of s and its handle.
func acquireLent(t *testing.T, s pooltest.SlotSource) (pool.Slot, cublas.Lent) {
	t.Helper()
	sl, err := s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	h, err := pool.Attached[cublas.Lent](sl)
	require.NoError(t, err)
	return sl, h
}

// acquireLents acquires n slots of s, and each one's handle.
func acquireLents(t *testing.T, s pooltest.SlotSource, n int) ([]pool.Slot, []cublas.Lent) {
	t.Helper()
	held, hs := make([]pool.Slot, n), make([]cublas.Lent, n)
	for i := range n {
		held[i], hs[i] = acquireLent(t, s)
	}
	return held, hs
}

// releaseAll gives held back to s.
func releaseAll(t *testing.T, s pooltest.SlotSource, held []pool.Slot) {
	t.Helper()
	for _, sl := range held {
		require.NoError(t, s.Release(sl))
	}
}

// newGemmFake is a fake made with opts, cuBLAS opened on it, and the
// layout of an n×n GEMM.
func newGemmFake(t *testing.T, n uint64, opts ...cudarttest.Option) (*cudarttest.Fake, *gemmLayout, *cublas.Library) {
	t.Helper()
	rt := cudarttest.NewFakeT(t, opts...)
	lib, err := cublas.Open(rt)
	require.NoError(t, err)
	return rt, newGemmLayout(t, n), lib
}

func blasSlots(t testing.TB, rt cudart.Runtime, n int, l *gemmLayout) *pool.Slots {
	t.Helper()
	lib, err := cublas.Open(rt)
	require.NoError(t, err)
	s, err := pool.NewSlots(rt, n, l.slots(lib, 0))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func floats(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Every slot has a handle of its own, on its own stream, in a workspace of
// its own inside its region; the handles go with Close.
func TestSlotsOwnTheirBLAS(t *testing.T) {
	rt, l, lib := newGemmFake(t, 4)
	s, err := pool.NewSlots(rt, 3, l.slots(lib, 0))
	require.NoError(t, err)
	require.Equal(t, 3, rt.Live().LibraryHandles)
	workspaces := map[cudart.DevicePtr]bool{}
	held, hs := acquireLents(t, s, 3)
	for i, sl := range held {
		h := hs[i]
		st, err := sl.Stream()
		require.NoError(t, err)
		hs, err := h.Stream()
		require.NoError(t, err)
		assert.Equal(t, st, hs, "the handle is on the slot's stream")
		ws, err := h.Workspace()
		require.NoError(t, err)
		require.NotNil(t, ws)
		p, err := ws.Ptr()
		require.NoError(t, err)
		assert.Equal(t, uint64(cublas.DefaultWorkspace), ws.Size())
		workspaces[p] = true
	}
	assert.Len(t, workspaces, 3, "a handle and a workspace each")
	releaseAll(t, s, held)
	require.NoError(t, s.Close())
	assert.Zero(t, rt.Live().LibraryHandles, "Close destroys the handles")
	_, err = pool.Attached[cublas.Lent](held[0])
	require.ErrorIs(t, err, pool.ErrClosed)
}

func TestSlotsBLASRefusals(t *testing.T) {
	rt, l, lib := newGemmFake(t, 4)
	_, err := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{l.req}, Attach: []pool.Attachment{lib.ForSlots(cublas.MinWorkspace - 1)}})
	require.ErrorIs(t, err, pool.ErrInvalidRequest)
	require.ErrorIs(t, err, cublas.ErrInvalidWorkspace)
	_, err = pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{l.req}, Attach: []pool.Attachment{cublas.SlotHandles{}}})
	require.ErrorIs(t, err, pool.ErrInvalidRequest, "no library")
	require.ErrorIs(t, err, cublas.ErrClosed)
	require.True(t, rt.Live().Empty(), "refused before anything is taken: %+v", rt.Live())

	s, err := pool.NewSlots(rt, 1, pool.SlotLayout{Profiles: []*pool.Profile{l.req}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	sl, err := s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	_, err = pool.Attached[cublas.Lent](sl)
	require.ErrorIs(t, err, pool.ErrInvalidRequest, "no library, no handle")
	require.NoError(t, s.Release(sl))
}

// A device with room for the slots' memory but not for their handles:
// NewSlots counts each slot's handle, HandleCharge outside the pool, when it
// checks the device's free memory, and refuses the layout before anything
// is taken, saying what the handles take, rather than failing at the third
// cublasCreate.
func TestSlotsBLASOnAFullDevice(t *testing.T) {
	rt, l, lib := newGemmFake(t, 4, cudarttest.WithDeviceMemory(256<<20))
	// 3 slots with a 32 MiB workspace each fit 256 MiB; their handles,
	// 3 × 64 MiB, do not.
	_, err := pool.NewSlots(rt, 3, l.slots(lib, 0))
	require.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.Contains(t, err.Error(), "192 MiB (201326592 B) more outside the pool (64 MiB a slot: SlotLayout.Attach[0] (cublas.SlotHandles) 64 MiB)")
	require.True(t, rt.Live().Empty(), "%+v", rt.Live())
}

// A request's graph captured on a slot holds kernels and copies, and no
// memory node: the handle works in the slot's workspace.
func TestASlotsGraphHoldsNoMemoryNode(t *testing.T) {
	rt := cudarttest.Open(t)
	const n = 64
	l := newGemmLayout(t, n)
	s := blasSlots(t, rt, 1, l)
	sl, h := acquireLent(t, s)
	defer func() { require.NoError(t, s.Release(sl)) }()
	st, err := sl.Stream()
	require.NoError(t, err)
	a, err := sl.Ptr(l.a)
	require.NoError(t, err)
	b, err := sl.Ptr(l.b)
	require.NoError(t, err)
	c, err := sl.Ptr(l.c)
	require.NoError(t, err)
	require.NoError(t, rt.Memset(0, a, 0, 4*n*n))
	require.NoError(t, rt.Memset(0, b, 0, 4*n*n))
	g := cublas.Gemm{M: n, N: n, K: n, Alpha: 1,
		A: cublas.Matrix{Ptr: a, Type: cublas.Float32, LD: n}, B: cublas.Matrix{Ptr: b, Type: cublas.Float32, LD: n}, C: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: n}}
	require.NoError(t, h.Gemm(g), "cuBLAS loads its kernels outside the capture")
	require.NoError(t, rt.StreamSynchronize(0, st))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, rt.StreamBeginCapture(0, st, cudart.CaptureModeGlobal))
	for range 3 {
		require.NoError(t, h.Gemm(g))
	}
	graph, err := rt.StreamEndCapture(0, st)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.GraphDestroy(0, graph)) }()
	counts, err := cudart.CountGraphNodes(rt, 0, graph)
	require.NoError(t, err)
	t.Logf("the request's graph: %v", counts)
	assert.Zero(t, counts.Memory(), "no memory node")
	assert.GreaterOrEqual(t, counts[cudart.GraphNodeKernel], 3)
}

// Sixteen goroutines serve GEMMs on four slots at once: each result is its
// own request's, so no two requests shared a handle or a workspace.
func TestConcurrentRequestsGetTheirOwnResults(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	const n = 2
	l := newGemmLayout(t, n)
	s := blasSlots(t, rt, 4, l)
	ctx := context.Background()
	// A = I, so C = B: each request's B is its own number.
	sl, err := s.Acquire(ctx, "request")
	require.NoError(t, err)
	a, err := sl.Ptr(l.a)
	require.NoError(t, err)
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(a, 16), cudart.HostMem(floats(1, 0, 0, 1)), cudart.HostToDevice))
	require.NoError(t, s.Release(sl))

	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for r := range 20 {
				v := float32(w*1000 + r)
				sl, err := s.Acquire(ctx, "request")
				if !assert.NoError(t, err) {
					return
				}
				h, _ := pool.Attached[cublas.Lent](sl)
				st, _ := sl.Stream()
				b, _ := sl.Ptr(l.b)
				c, _ := sl.Ptr(l.c)
				out := make([]byte, 16)
				assert.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(b, 16), cudart.HostMem(floats(v, v, v, v)), cudart.HostToDevice, st))
				assert.NoError(t, h.Gemm(cublas.Gemm{M: n, N: n, K: n, Alpha: 1,
					A: cublas.Matrix{Ptr: a, Type: cublas.Float32, LD: n}, B: cublas.Matrix{Ptr: b, Type: cublas.Float32, LD: n}, C: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: n}}))
				assert.NoError(t, rt.MemcpyAsync(0, cudart.HostMem(out), cudart.DeviceMem(c, 16), cudart.DeviceToHost, st))
				assert.NoError(t, rt.StreamSynchronize(0, st))
				assert.Equal(t, floats(v, v, v, v), out, "request %d of worker %d", r, w)
				assert.NoError(t, s.Release(sl))
			}
		})
	}
	wg.Wait()
}

// A slot's buffer serves as the workspace of a handle of the caller's while
// the slot is held, and is refused once it is released.
func TestASlotsBufferAsAWorkspace(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	l := newGemmLayout(t, 4)
	ws, err := l.req.Device(cublas.MinWorkspace, pool.Name("workspace"))
	require.NoError(t, err)
	s, err := pool.NewSlots(rt, 1, pool.SlotLayout{Shared: l.shared, Profiles: []*pool.Profile{l.req}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	h := newHandle(t, rt)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })

	sl, err := s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	_, err = sl.Workspace(l.a)
	require.ErrorIs(t, err, pool.ErrInvalidRequest, "a shared buffer")
	w, err := sl.Workspace(ws)
	require.NoError(t, err)
	require.NoError(t, h.SetWorkspace(w))
	c, err := sl.Ptr(l.c)
	require.NoError(t, err)
	g := cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: 4},
		B: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: 4}, C: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: 4}}
	require.NoError(t, rt.Memset(0, c, 0, 64))
	require.NoError(t, h.Gemm(g))
	require.NoError(t, rt.DeviceSynchronize(0))
	require.NoError(t, s.Release(sl))
	require.ErrorIs(t, h.Gemm(g), cublas.ErrInvalidWorkspace, "the slot went back")
}

// A workspace of any size from cublas.MinWorkspace up fits: each slot's
// region is placed at a 256-byte multiple, as every buffer is.
func TestSlotsTakeAnyWorkspaceSize(t *testing.T) {
	for _, n := range []uint64{5_000_000, cublas.MinWorkspace + 1, 32<<20 + 128, cublas.MinWorkspace} {
		rt, l, lib := newGemmFake(t, 3)
		s, err := pool.NewSlots(rt, 3, l.slots(lib, n))
		require.NoError(t, err, "a workspace of %d B", n)
		held, hs := acquireLents(t, s, 3)
		for _, h := range hs {
			ws, err := h.Workspace()
			require.NoError(t, err)
			require.NotNil(t, ws)
			assert.Equal(t, n, ws.Size())
		}
		releaseAll(t, s, held)
		require.NoError(t, s.Close())
	}
}

// A request that changes its slot's handle changes it for itself alone: the
// next request on the slot gets the slot's stream, the slot's workspace and
// the default math mode, in cuBLAS as in the binding, and the handle of the
// released request refuses every call.
func TestASlotsHandleIsTheRequests(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	l := newGemmLayout(t, 1)
	scratch, err := l.req.Device(cublas.MinWorkspace, pool.Name("scratch"))
	require.NoError(t, err)
	s := blasSlots(t, rt, 1, l)
	// C = A·B with A = 1+2⁻¹², B = 1: TF32 rounds A to 1.
	product := func(sl pool.Slot, h cublas.Lent) float32 {
		t.Helper()
		st, err := sl.Stream()
		require.NoError(t, err)
		a, _ := sl.Ptr(l.a)
		b, _ := sl.Ptr(l.b)
		c, _ := sl.Ptr(l.c)
		require.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(a, 4), cudart.HostMem(floats(1+0x1p-12)), cudart.HostToDevice, st))
		require.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(b, 4), cudart.HostMem(floats(1)), cudart.HostToDevice, st))
		f32 := func(p cudart.DevicePtr) cublas.Matrix { return cublas.Matrix{Ptr: p, Type: cublas.Float32, LD: 1} }
		require.NoError(t, h.Gemm(cublas.Gemm{M: 1, N: 1, K: 1, Alpha: 1, A: f32(a), B: f32(b), C: f32(c)}))
		out := make([]byte, 4)
		require.NoError(t, rt.MemcpyAsync(0, cudart.HostMem(out), cudart.DeviceMem(c, 4), cudart.DeviceToHost, st))
		require.NoError(t, rt.StreamSynchronize(0, st))
		return math.Float32frombits(binary.LittleEndian.Uint32(out))
	}

	first, h1 := acquireLent(t, s)
	slotWS, err := h1.Workspace()
	require.NoError(t, err)
	slotStream, err := first.Stream()
	require.NoError(t, err)
	require.Equal(t, float32(1+0x1p-12), product(first, h1), "FP32 by default")
	require.NoError(t, h1.SetMathMode(cublas.MathTF32))
	require.Equal(t, float32(1), product(first, h1), "TF32 once the request asks")
	ws, err := first.Workspace(scratch)
	require.NoError(t, err)
	require.NoError(t, h1.SetWorkspace(ws))
	own := pooltest.Stream(t, rt, 0)
	require.ErrorIs(t, h1.SetStream(own), cublas.ErrInvalidStream, "Release waits for the slot's stream alone")
	require.NoError(t, h1.SetStream(slotStream), "the slot's own stream")
	require.NoError(t, s.Release(first))

	for name, call := range map[string]func() error{
		"Gemm":         func() error { return h1.Gemm(cublas.Gemm{}) },
		"Batched":      func() error { return h1.GemmStridedBatched(cublas.Gemm{}, 1) },
		"SetMathMode":  func() error { return h1.SetMathMode(cublas.MathDefault) },
		"SetWorkspace": func() error { return h1.SetWorkspace(slotWS) },
		"SetStream":    func() error { return h1.SetStream(slotStream) },
		"Stream":       func() error { _, err := h1.Stream(); return err },
		"Workspace":    func() error { _, err := h1.Workspace(); return err },
		"MathMode":     func() error { _, err := h1.MathMode(); return err },
		"Device":       func() error { _, err := h1.Device(); return err },
	} {
		require.ErrorIs(t, call(), pool.ErrSlotReleased, "%s on a released request's handle", name)
	}

	second, h2 := acquireLent(t, s)
	mode, err := h2.MathMode()
	require.NoError(t, err)
	assert.Equal(t, cublas.MathDefault, mode)
	got, err := h2.Workspace()
	require.NoError(t, err)
	assert.Equal(t, slotWS, got, "the slot's workspace")
	st, err := h2.Stream()
	require.NoError(t, err)
	assert.Equal(t, slotStream, st)
	assert.Equal(t, float32(1+0x1p-12), product(second, h2), "cuBLAS is back in FP32")
	got, err = h2.Workspace()
	require.NoError(t, err)
	assert.Equal(t, slotWS, got)
	require.ErrorIs(t, h1.Gemm(cublas.Gemm{}), pool.ErrSlotReleased, "still refused while the next request holds the handle")
	require.NoError(t, s.Release(second))
}

// Taking a slot's handle, reading it and setting what it has already
// allocate nothing.
func TestAnUnchangedHandleCostsNothing(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	l := newGemmLayout(t, 1)
	s := blasSlots(t, rt, 1, l)
	ctx := context.Background()
	sl, err := s.Acquire(ctx, "request")
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Release(sl)) }()
	st, err := sl.Stream()
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		h, _ := pool.Attached[cublas.Lent](sl)
		if _, err := h.MathMode(); err != nil {
			panic(err)
		}
		if err := h.SetMathMode(cublas.MathDefault); err != nil {
			panic(err)
		}
		if err := h.SetStream(st); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// pool.Attached while the slots close returns a handle that refuses, or an
// error; never a nil handle and no error.
func TestBLASWhileTheSlotsClose(t *testing.T) {
	rt, l, lib := newGemmFake(t, 1)
	s, err := pool.NewSlots(rt, 1, l.slots(lib, 0))
	require.NoError(t, err)
	sl, err := s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, s.Close())
	}()
	for closed := false; !closed; {
		select {
		case <-done:
			closed = true
		default:
		}
		h, err := pool.Attached[cublas.Lent](sl)
		if err != nil {
			require.ErrorIs(t, err, pool.ErrClosed)
			continue
		}
		if _, err := h.Stream(); err != nil {
			require.ErrorIs(t, err, pool.ErrClosed)
		}
	}
	_, err = pool.Attached[cublas.Lent](sl)
	require.ErrorIs(t, err, pool.ErrClosed)
}

// Slots on two devices: each slot's handle is on the slot's device and
// stream, working in a workspace there, and its GEMM runs there.
func TestSlotHandlesOnEveryDevice(t *testing.T) {
	rt, l, lib := newGemmFake(t, 2, cudarttest.WithDevices(2))
	m, err := pool.NewMultiSlots(rt, []int{0, 1}, 2, l.slots(lib, 0))
	require.NoError(t, err)
	require.Equal(t, 4, rt.Live().LibraryHandles)
	held, hs := acquireLents(t, m, 4)
	for i, sl := range held {
		h := hs[i]
		d, err := h.Device()
		require.NoError(t, err)
		require.Equal(t, sl.Device(), d)
		st, err := h.Stream()
		require.NoError(t, err)
		require.Equal(t, must(sl.Stream()), st)
		ws, err := h.Workspace()
		require.NoError(t, err)
		require.Equal(t, sl.Device(), ws.Device())
		a, b, c := must(sl.Ptr(l.a)), must(sl.Ptr(l.b)), must(sl.Ptr(l.c))
		v := float32(sl.Device()*10 + sl.Index() + 1)
		require.NoError(t, rt.MemcpyAsync(sl.Device(), cudart.DeviceMem(a, 16), cudart.HostMem(floats(1, 0, 0, 1)), cudart.HostToDevice, st))
		require.NoError(t, rt.MemcpyAsync(sl.Device(), cudart.DeviceMem(b, 16), cudart.HostMem(floats(v, v, v, v)), cudart.HostToDevice, st))
		m32 := func(p cudart.DevicePtr) cublas.Matrix { return cublas.Matrix{Ptr: p, Type: cublas.Float32, LD: 2} }
		require.NoError(t, h.Gemm(cublas.Gemm{M: 2, N: 2, K: 2, Alpha: 1, A: m32(a), B: m32(b), C: m32(c)}))
		out := make([]byte, 16)
		require.NoError(t, rt.MemcpyAsync(sl.Device(), cudart.HostMem(out), cudart.DeviceMem(c, 16), cudart.DeviceToHost, st))
		require.NoError(t, rt.StreamSynchronize(sl.Device(), st))
		assert.Equal(t, floats(v, v, v, v), out, "slot %d of device %d", sl.Index(), sl.Device())
	}
	devs := map[int]int{}
	for _, sl := range held {
		devs[sl.Device()]++
		require.NoError(t, m.Release(sl))
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, devs)
	require.NoError(t, m.Close())
	assert.Zero(t, rt.Live().LibraryHandles)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
