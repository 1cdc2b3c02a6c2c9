package conformance

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// need is rt as the capability T, or skips t when rt lacks it.
func need[T any](t *testing.T, rt cudart.Runtime) T {
	t.Helper()
	c, ok := rt.(T)
	if !ok {
		t.Skipf("runtime does not implement %s", reflect.TypeFor[T]())
	}
	return c
}

// kernels is the suite's kernels loaded on the suite's device.
type kernels struct {
	k                cudart.Kernels
	fill, axpy, args cudart.Function
}

// loadKernels loads suitePTX, unloaded at cleanup, or skips when the runtime
// cannot launch kernels.
func (s *suite) loadKernels(t *testing.T) *kernels {
	t.Helper()
	k := need[cudart.Kernels](t, s.rt)
	registerSuiteKernels(s.rt)
	m := s.loadModule(t, k, suitePTX)
	ks := &kernels{k: k}
	for name, fn := range map[string]*cudart.Function{"fill": &ks.fill, "axpy": &ks.axpy, "args": &ks.args} {
		var err error
		*fn, err = k.ModuleGetFunction(s.dev, m, name)
		require.NoError(t, err)
		require.NotZero(t, *fn, name)
	}
	return ks
}

// loadModule loads ptx, unloaded at cleanup.
func (s *suite) loadModule(t *testing.T, k cudart.Kernels, ptx string) cudart.Module {
	t.Helper()
	m, err := k.ModuleLoadData(s.dev, ptx)
	require.NoError(t, err, calls.CuModuleLoadDataEx)
	require.NotZero(t, m)
	once(t, calls.CuModuleUnload, func() error { return k.ModuleUnload(s.dev, m) })
	return m
}

// stream creates a stream destroyed at cleanup.
func (s *suite) stream(t *testing.T) (cudart.Streams, cudart.Stream) {
	t.Helper()
	st := need[cudart.Streams](t, s.rt)
	stream, err := st.StreamCreate(s.dev)
	require.NoError(t, err)
	once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(s.dev, stream) })
	return st, stream
}

// words reads n little-endian 32-bit words at p.
func (s *suite) words(t *testing.T, p cudart.DevicePtr, n int) []uint32 {
	t.Helper()
	b := s.read(t, p, uint64(4*n))
	w := make([]uint32, n)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// floats writes v as float32s at p.
func (s *suite) floats(t *testing.T, p cudart.DevicePtr, v []float32) {
	t.Helper()
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	s.write(t, p, b)
}

// fillLaunch launches fill of n words of p with value on stream st, in
// blocks of 256 threads.
func (ks *kernels) fillLaunch(dev int, p cudart.DevicePtr, n, value uint32, st cudart.Stream) error {
	return ks.k.LaunchKernel(dev, ks.fill, cudart.Dim1((n+255)/256), cudart.Dim1(256), 0, st, cudart.Arg(p), cudart.Arg(n), cudart.Arg(value))
}

func (s *suite) testKernels(t *testing.T) {
	ks := s.loadKernels(t)
	t.Run("PTXRefusal", func(t *testing.T) { s.testPTXRefusal(t, ks.k) })
	const n = 1000 // four blocks of 256 threads, the last one partly idle
	p := s.malloc(t, 4*(n+1))
	require.NoError(t, s.rt.Memset(s.dev, p, 0xab, 4*(n+1)))

	t.Run("LaunchAndReadBack", func(t *testing.T) {
		require.NoError(t, ks.fillLaunch(s.dev, p, n, 0x600d_f00d, 0))
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		w := s.words(t, p, n+1)
		for i := range n {
			require.Equal(t, uint32(0x600d_f00d), w[i], "word %d, in block %d", i, i/256)
		}
		assert.Equal(t, uint32(0xabab_abab), w[n], "the word after n is not written")
	})
	t.Run("EveryArgumentType", func(t *testing.T) {
		out := s.malloc(t, argsOutBytes)
		require.NoError(t, s.rt.Memset(s.dev, out, 0, argsOutBytes))
		require.NoError(t, ks.k.LaunchKernel(s.dev, ks.args, cudart.Dim1(1), cudart.Dim1(1), 0, 0,
			cudart.Arg(out), cudart.Arg[int32](-7), cudart.Arg[uint32](math.MaxUint32-1), cudart.Arg[int64](-1<<40),
			cudart.Arg[uint64](1<<63+5), cudart.Arg[float32](-2.5), cudart.Arg[float64](math.Pi)))
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		b := s.read(t, out, argsOutBytes)
		le := binary.LittleEndian
		assert.Equal(t, int32(-7), int32(le.Uint32(b[0:])), "int32")
		assert.Equal(t, uint32(math.MaxUint32-1), le.Uint32(b[4:]), "uint32")
		assert.Equal(t, int64(-1<<40), int64(le.Uint64(b[8:])), "int64")
		assert.Equal(t, uint64(1<<63+5), le.Uint64(b[16:]), "uint64")
		assert.Equal(t, float32(-2.5), math.Float32frombits(le.Uint32(b[24:])), "float32")
		assert.Equal(t, math.Pi, math.Float64frombits(le.Uint64(b[32:])), "float64")
	})
	t.Run("Float32Axpy", func(t *testing.T) {
		x, y := s.malloc(t, 4*n), s.malloc(t, 4*n)
		xs, ys := make([]float32, n), make([]float32, n)
		for i := range n {
			xs[i], ys[i] = float32(i), float32(i)/2
		}
		s.floats(t, x, xs)
		s.floats(t, y, ys)
		require.NoError(t, ks.k.LaunchKernel(s.dev, ks.axpy, cudart.Dim1(8), cudart.Dim1(128), 0, 0,
			cudart.Arg(y), cudart.Arg(x), cudart.Arg[float32](3), cudart.Arg[uint32](n)))
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		for i, w := range s.words(t, y, n) {
			require.Equal(t, 3*float32(i)+float32(i)/2, math.Float32frombits(w), "y[%d]", i)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		err := ks.k.LaunchKernel(s.dev, ks.fill, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(p), cudart.Arg[uint32](1))
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "an argument short")
		assert.ErrorContains(t, err, "fill")
		err = ks.k.LaunchKernel(s.dev, ks.fill, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(p), cudart.Arg[uint64](1), cudart.Arg[uint32](1))
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "an argument of the wrong size")
		m := s.loadModule(t, ks.k, suitePTX)
		_, err = ks.k.ModuleGetFunction(s.dev, m, "fil")
		assert.ErrorIs(t, err, cudart.ErrNotFound, "an unknown kernel")
		assert.ErrorContains(t, err, "fil")

		st := need[cudart.Streams](t, s.rt)
		dead, err := st.StreamCreate(s.dev)
		require.NoError(t, err)
		require.NoError(t, st.StreamDestroy(s.dev, dead))
		err = ks.fillLaunch(s.dev, p, n, 1, dead)
		assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "a destroyed stream")
		assert.ErrorContains(t, err, "fill")
		err = st.StreamDestroy(s.dev, dead)
		assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "destroyed twice")

		require.NoError(t, ks.fillLaunch(s.dev, p, n, 2, 0), "the runtime stays usable")
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		assert.Equal(t, uint32(2), s.words(t, p, n)[n-1])
	})
}

// testMallocHeap: a kernel's device-side malloc draws on the heap of
// LimitMallocHeapSize, which must be set before a kernel that calls malloc
// first runs: the suite raises it, sees an allocation beyond CUDA's default
// 8 MiB succeed, and one beyond the raised heap fail. The heap stays raised:
// CUDA fixes it once such a kernel has run. Memory a kernel kept is not
// cudaFree's to free: CUDA 13.0 on an H200 refuses it with
// cudaErrorInvalidValue, and the heap has the bytes back only once a
// kernel frees them.
func (s *suite) testMallocHeap(t *testing.T, k cudart.Kernels) {
	d := need[cudart.Device](t, s.rt)
	registerSuiteKernels(s.rt)
	const heap = 64 * mib
	require.NoError(t, d.DeviceSetLimit(s.dev, cudart.LimitMallocHeapSize, heap), "before any kernel calls malloc")
	m := s.loadModule(t, k, suiteHeapPTX)
	fn, err := k.ModuleGetFunction(s.dev, m, "heap")
	require.NoError(t, err)
	out := s.malloc(t, 4)
	got := func(size uint64) uint32 {
		require.NoError(t, s.rt.Memset(s.dev, out, 0xff, 4))
		require.NoError(t, k.LaunchKernel(s.dev, fn, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(out), cudart.Arg(size)))
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		return s.words(t, out, 1)[0]
	}
	assert.Equal(t, uint32(1), got(16*mib), "16 MiB, beyond the default 8 MiB heap, within the raised one")
	assert.Equal(t, uint32(0), got(2*heap), "twice the heap: malloc returns NULL")
	assert.Equal(t, uint32(1), got(16*mib), "the first allocation was freed")

	keep, err := k.ModuleGetFunction(s.dev, m, "heapKeep")
	require.NoError(t, err)
	free, err := k.ModuleGetFunction(s.dev, m, "heapFree")
	require.NoError(t, err)
	kept := s.malloc(t, 8)
	run := func(fn cudart.Function, args ...cudart.KernelArg) {
		require.NoError(t, k.LaunchKernel(s.dev, fn, cudart.Dim1(1), cudart.Dim1(1), 0, 0, args...))
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
	}
	malloc := func(size uint64) cudart.DevicePtr {
		run(keep, cudart.Arg(kept), cudart.Arg(size))
		return cudart.DevicePtr(binary.LittleEndian.Uint64(s.read(t, kept, 8)))
	}
	// Two of these do not fit the heap together.
	const big = 40 * mib
	p := malloc(big)
	require.NotZero(t, p, "40 MiB of the 64 MiB heap")
	err = s.rt.Free(s.dev, p)
	t.Logf("cudaFree of device-side malloc memory: %v", err)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "cudaFree of memory a kernel's malloc returned")
	assert.Zero(t, malloc(big), "the refused cudaFree gave nothing back to the heap")
	run(free, cudart.Arg(p))
	q := malloc(big)
	assert.NotZero(t, q, "the kernel's free gave the 40 MiB back")
	if q != 0 {
		run(free, cudart.Arg(q))
	}
}

// putFloats stores v(i) as the i-th little-endian float32 of b.
func putFloats(b []byte, v func(i int) float32) {
	for i := range len(b) / 4 {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v(i)))
	}
}

// getFloats reads b as little-endian float32s.
func getFloats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
