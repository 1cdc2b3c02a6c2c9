package cudart

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/ptx"
)

func TestLaunchPassesArguments(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	withFill(l, 0)
	require.NoError(t, l.LaunchKernel(0, 0x2000, Dim3{2, 3, 4}, Dim3{32, 2, 1}, 512, 0x77, Arg[DevicePtr](0xabc0), Arg[uint32](math.MaxUint32), Arg[uint32](9)))
	require.Len(t, rec.launches, 1)
	assert.Equal(t, []uintptr{0x2000, 2, 3, 4, 32, 2, 1, 512, 0x77}, rec.launches[0].args[:9], "function, grid, block, shared memory, stream")
	assert.NotZero(t, rec.launches[0].args[9], "the parameter array")
	assert.Zero(t, rec.launches[0].args[10], "no extra")
	assert.Equal(t, []uint64{0xabc0, math.MaxUint32, 9}, rec.launches[0].params)

	info, err := ptx.Parse(".version 8.0 .target sm_80 .entry all(.param .u64 a, .param .s32 b, .param .u32 c, .param .s64 d, .param .u64 e, .param .f32 f, .param .f64 g) {}")
	require.NoError(t, err)
	l.registry.addModule(0x1100, 0, info)
	l.registry.addFunction(0x2100, 0x1100, info.Entries[0])
	require.NoError(t, l.LaunchKernel(0, 0x2100, Dim1(1), Dim1(1), 0, 0,
		Arg[DevicePtr](0x10), Arg[int32](-2), Arg[uint32](3), Arg[int64](-4), Arg[uint64](5), Arg[float32](1.5), Arg[float64](-2.25)))
	assert.Equal(t, []uint64{0x10, 0xffff_fffe, 3, math.MaxUint64 - 3, 5, uint64(math.Float32bits(1.5)), math.Float64bits(-2.25)}, rec.launches[1].params)
	assert.Zero(t, rec.launches[1].args[8], "the legacy default stream")
}

func TestLaunchWithoutArguments(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	info := testPTXInfo()
	e, _ := info.Entry("empty")
	l.registry.addModule(0x1000, 0, info)
	l.registry.addFunction(0x2200, 0x1000, e)
	require.NoError(t, l.LaunchKernel(0, 0x2200, Dim1(1), Dim1(1), 0, 0))
	assert.Zero(t, rec.launches[0].args[9], "no parameter array")
}

func TestLibRefusesBadKernelCalls(t *testing.T) {
	cases := []struct {
		name string
		call func(l *library) error
		as   *Error
		want string
	}{
		{"unknown kernel", func(l *library) error { _, err := l.ModuleGetFunction(0, 0x1000, "fil"); return err },
			ErrNotFound, `cuModuleGetFunction(module 0x1000, "fil") on device 0: cudaErrorSymbolNotFound (500): named symbol not found: the module's PTX has no .entry "fil"; it has empty, fill, mixed`},
		{"unknown module", func(l *library) error { _, err := l.ModuleGetFunction(0, 0x1100, "fill"); return err },
			ErrInvalidResourceHandle, "not a module ModuleLoadData loaded"},
		{"unload twice", func(l *library) error { return l.ModuleUnload(0, 0x1100) }, ErrInvalidResourceHandle, "unloaded already"},
		{"module of another device", func(l *library) error { _, err := l.ModuleGetFunction(1, 0x1000, "fill"); return err },
			ErrInvalidResourceHandle, "the module was loaded on device 0"},
		{"unload on another device", func(l *library) error { return l.ModuleUnload(2, 0x1000) }, ErrInvalidResourceHandle, "loaded on device 0"},
		{"kernel of another device", func(l *library) error {
			return l.LaunchKernel(1, 0x2000, Dim1(1), Dim1(1), 0, 0, Arg[DevicePtr](0x1000), Arg[uint32](1), Arg[uint32](1))
		}, ErrInvalidResourceHandle, "kernel fill was loaded on device 0"},
		{"too few arguments", func(l *library) error {
			return l.LaunchKernel(0, 0x2000, Dim1(1), Dim1(1), 0, 0, Arg[DevicePtr](0x1000), Arg[uint32](1))
		}, ErrInvalidValue, "cuLaunchKernel(fill, grid (1,1,1), block (1,1,1), 0 B shared, stream 0x0, [ptr(0x1000) uint32(1)]) on device 0: cudaErrorInvalidValue (1): invalid argument: kernel fill takes 3 arguments (of [8 4 4] bytes), got 2"},
		{"wrong size", func(l *library) error {
			return l.LaunchKernel(0, 0x2000, Dim1(1), Dim1(1), 0, 0, Arg[DevicePtr](0x1000), Arg[uint64](1), Arg[uint32](1))
		}, ErrInvalidValue, "argument 2 of 3 of kernel fill is uint64(1), 8 B; the parameter is 4 B"},
		{"zero dimension", func(l *library) error {
			return l.LaunchKernel(0, 0x2000, Dim3{X: 4}, Dim1(1), 0, 0, Arg[DevicePtr](0x1000), Arg[uint32](1), Arg[uint32](1))
		}, ErrInvalidValue, "grid (4,0,0) of fill: every dimension must be at least 1"},
		{"unknown function", func(l *library) error { return l.LaunchKernel(0, 0x2100, Dim1(1), Dim1(1), 0, 0) },
			ErrInvalidResourceHandle, "cuLaunchKernel(function 0x2100, "},
		{"bad PTX", func(l *library) error {
			_, err := l.ModuleLoadData(0, ".version 8.0\n.target sm_80\n.entry k(.param x) {}")
			return err
		},
			ErrInvalidPTX, "cuModuleLoadDataEx(48 B of PTX) on device 0: cudaErrorInvalidPtx (218): a PTX JIT compilation failed: cudart: PTX line 3: .entry k: parameter 1: no type"},
		{"no PTX", func(l *library) error { _, err := l.ModuleLoadData(0, "garbage"); return err },
			ErrInvalidImage, `cuModuleLoadDataEx(7 B of PTX) on device 0: cudaErrorInvalidKernelImage (200): device kernel image is invalid: cudart: PTX line 1: no PTX: it starts with "garbage", not .version`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder()
			l := newRecorderLibrary(rec, nil)
			withFill(l, 0)
			err := c.call(l)
			assert.ErrorIs(t, err, c.as)
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), c.want)
			}
			assert.Empty(t, rec.calls, "refused before CUDA")
		})
	}
}

func TestUnloadedModuleFunctionsAreRefused(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	withFill(l, 0)
	require.NoError(t, l.ModuleUnload(0, 0x1000))
	err := l.LaunchKernel(0, 0x2000, Dim1(1), Dim1(1), 0, 0, Arg[DevicePtr](0x1000), Arg[uint32](1), Arg[uint32](1))
	assert.ErrorIs(t, err, ErrInvalidResourceHandle)
	assert.Equal(t, []string{"cuModuleUnload@0"}, rec.calls)
}

func TestDestroyedStreamIsRefused(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	withFill(l, 0)
	s, err := l.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, l.StreamDestroy(0, s))
	calls := map[string]func() error{
		"cuLaunchKernel": func() error {
			return l.LaunchKernel(0, 0x2000, Dim1(1), Dim1(1), 0, s, Arg[DevicePtr](0x1000), Arg[uint32](1), Arg[uint32](1))
		},
		"cudaEventRecord":        func() error { return l.EventRecord(0, 0x3000, s) },
		"cudaStreamWaitEvent":    func() error { return l.StreamWaitEvent(0, s, 0x3000) },
		"cudaStreamBeginCapture": func() error { return l.StreamBeginCapture(0, s, CaptureModeGlobal) },
		"cudaGraphLaunch":        func() error { return l.GraphLaunch(0, 0x5000, s) },
		"cudaStreamDestroy":      func() error { return l.StreamDestroy(0, s) },
		"cudaMemsetAsync":        func() error { return l.MemsetAsync(0, 0x1000, 0, 64, s) },
		"cudaStreamGetDevice":    func() error { _, err := l.StreamDevice(0, s); return err },
	}
	for name, call := range calls {
		err := call()
		assert.ErrorIs(t, err, ErrInvalidResourceHandle, name)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), name+"(")
			assert.Contains(t, err.Error(), "was destroyed by StreamDestroy")
		}
	}
	assert.Equal(t, []string{"cudaStreamCreate@0", "cudaStreamDestroy@0"}, rec.calls)

	again, err := l.StreamCreate(0)
	require.NoError(t, err)
	require.Equal(t, s, again, "the recorder hands out the same handle")
	assert.NoError(t, l.EventRecord(0, 0x3000, again), "a handle CUDA hands out again is live")
}

func TestEventQueryNotReadyIsFalse(t *testing.T) {
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	done, err := l.EventQuery(0, 0x3000)
	require.NoError(t, err)
	assert.True(t, done)
	rec.codes[calls.EventQuery] = ErrNotReady.Code
	done, err = l.EventQuery(0, 0x3000)
	require.NoError(t, err)
	assert.False(t, done)
	rec.codes[calls.EventQuery] = ErrInvalidResourceHandle.Code
	_, err = l.EventQuery(0, 0x3000)
	assert.ErrorIs(t, err, ErrInvalidResourceHandle)
}

func TestKernelArgs(t *testing.T) {
	for _, c := range []struct {
		arg  KernelArg
		kind argKind
		size uint32
		text string
	}{
		{Arg[DevicePtr](0x1000), argKindPtr, 8, "ptr(0x1000)"},
		{Arg[int32](-1), argKindInt32, 4, "int32(-1)"},
		{Arg[uint32](7), argKindUint32, 4, "uint32(7)"},
		{Arg[int64](-5), argKindInt64, 8, "int64(-5)"},
		{Arg[uint64](5), argKindUint64, 8, "uint64(5)"},
		{Arg[float32](0.5), argKindFloat32, 4, "float32(0.5)"},
		{Arg[float64](2), argKindFloat64, 8, "float64(2)"},
	} {
		assert.Equal(t, c.kind, c.arg.kind, c.text)
		assert.Equal(t, c.size, c.arg.Size(), c.text)
		assert.Equal(t, c.text, c.arg.String())
	}
	assert.Equal(t, "argKind(9)", argKind(9).String())
	assert.Equal(t, "(3,1,1)", Dim1(3).String())
	assert.Equal(t, "cudaStreamCaptureModeRelaxed", CaptureModeRelaxed.String())
	assert.Equal(t, "cudaStreamCaptureMode(7)", CaptureMode(7).String())
}
