package cudart

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// The annotation tests need no CUDA: a library over the recorder, told of a
// tool built from testdata/fakenvtx.c, which logs what it receives.

// fakeTool builds a fresh copy of testdata/fakenvtx.c with defs.
func fakeTool(t *testing.T, defs ...string) string {
	t.Helper()
	return buildTestLibrary(t, "fakenvtx.c", defs...)
}

// annotatedLibrary is a library whose annotations go to the tool at path, attached
// afresh as the environment's would be; none for "".
func annotatedLibrary(t *testing.T, path string) *library {
	t.Helper()
	l := newRecorderLibrary(newRecorder(), nil)
	l.ann.once.Do(func() { l.ann.tool = loadNVTX(path) })
	return l
}

// toolLog is every line the fake tool at so has written.
func toolLog(t *testing.T, so string) []string {
	t.Helper()
	tool, err := dl.Open([]string{so}, []dl.Symbol{{Name: "fakenvtx_log"}}, 0)
	require.NoError(t, err)
	defer tool.Close() // the loader counts opens: the tool stays loaded
	return strings.Split(strings.TrimSuffix(dl.GoString(dl.Call(tool.Fns[0])), "\n"), "\n")
}

// mapped reports whether so is mapped into the process.
func mapped(t *testing.T, so string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return strings.Contains(string(maps), so)
}

// freshProcessTool makes the next annotation look for the process's tool
// again, as a new process would.
func freshProcessTool(t *testing.T) {
	old := processTool
	processTool = sync.OnceValue(toolFromEnv)
	t.Cleanup(func() { processTool = old })
}

// The addresses are never dereferenced: neither the binding nor the fake
// touches annotated memory.
const (
	arena = DevicePtr(0x10000000)
	other = DevicePtr(0x20000000)
)

// coreInitLog is what the fake logs of a core init that offers CORE,
// CORE2 and SYNC, as the binding does.
var coreInitLog = []string{
	"core-init callbacks=16 version-info=24 version=3 table2=null",
	"module 1: size=16 entry0=null last=null entries=15 filled=0",
	"module 2: none",
	"module 3: none",
	"module 4: none",
	"module 5: size=16 entry0=null last=null entries=15 filled=0",
	"module 6: size=7 entry0=null last=null entries=6 filled=0",
	"module 7: none",
}

const extInitLog = "ext-init version=3 size=40 module=1 compat=0x102 segments=1 id=1 slots=63 export=null info=null"

func TestAnnotationsReachTheTool(t *testing.T) {
	so := fakeTool(t)
	l := annotatedLibrary(t, so)
	require.True(t, l.AnnotationsEnabled(0))
	assert.Equal(t, uintptr(extLoaded), memSlots[0], "the module is loaded")
	assert.Equal(t, uintptr(extDisabled), memSlots[5], "nvtxMemRegionsResize (id 5, slot 4), which the tool left empty, is disabled")
	assert.Greater(t, memSlots[cbHeapRegister], uintptr(extLoaded), "nvtxMemHeapRegister (id 1) is in slot 0")
	assert.Equal(t, uintptr(extDisabled), memSlots[len(memSlots)-1], "the last slot, which no function fills, is disabled")

	h, err := l.MemHeapRegister(0, arena, 64<<10, "arena")
	require.NoError(t, err)
	require.NotZero(t, h)
	unnamed, err := l.MemHeapRegister(0, other, 4096, "")
	require.NoError(t, err)
	require.NoError(t, l.MemRegionsRegister(h, []MemRegion{
		{Addr: arena, Size: 4096, Name: "weights"},
		{Addr: arena + 0x1000, Size: 512},
		{Addr: arena + 0x2000, Size: 256, Name: "grads"},
	}))
	require.NoError(t, l.MemRegionsRegister(h, []MemRegion{{Addr: arena + 0x3000, Size: 8}}))
	require.NoError(t, l.MemRegionsRegister(h, nil), "nothing to register")
	require.NoError(t, l.MemRegionsName(h, []MemRegion{{Addr: arena + 0x1000, Name: "bias"}, {Addr: arena, Name: ""}}))
	require.NoError(t, l.MemRegionsUnregister(h, []DevicePtr{arena, arena + 0x1000}))
	require.NoError(t, l.MemRegionsUnregister(h, nil), "nothing to unregister")
	require.NoError(t, l.MemHeapReset(h))
	require.NoError(t, l.MemHeapUnregister(h))
	require.NoError(t, l.MemHeapUnregister(unnamed))

	want := append(append([]string{}, coreInitLog...),
		"domain-create cudapool",
		extInitLog,
		"heap-register cudapool size=48 compat=0x102 usage=1 type=1 desc=16 range=0x10000000+65536 category=0 message=1:arena -> 0x7010",
		"heap-register cudapool size=48 compat=0x102 usage=1 type=1 desc=16 range=0x20000000+4096 category=0 message=0:- -> 0x7020",
		"regions-register cudapool size=48 compat=0x102 type=1 heap=0x7010 count=3 element=16 out=null: 0x10000000+4096 0x10001000+512 0x10002000+256",
		"regions-name cudapool size=40 compat=0x102 count=2 element=32: 1/1/0x10000000=weights/0 1/1/0x10002000=grads/0",
		"regions-register cudapool size=48 compat=0x102 type=1 heap=0x7010 count=1 element=16 out=null: 0x10003000+8",
		"regions-name cudapool size=40 compat=0x102 count=2 element=32: 1/1/0x10001000=bias/0 1/1/0x10000000=/0",
		"regions-unregister cudapool size=32 compat=0x102 ref=1 count=2 element=8: 0x10000000 0x10001000",
		"heap-reset cudapool 0x7010",
		"heap-unregister cudapool 0x7010",
		"heap-unregister cudapool 0x7020",
	)
	assert.Equal(t, want, toolLog(t, so))
}

// TestAnnotationsToolVariants: a tool that does less, or fails, leaves the
// binding working: annotations are on only when the extension's init
// succeeded with the functions a sub-allocator needs, and no call errs.
func TestAnnotationsToolVariants(t *testing.T) {
	// nullDomain is what useAnnotations makes the tool log in the NULL
	// domain.
	nullDomain := []string{
		extInitLog,
		"heap-register null size=48 compat=0x102 usage=1 type=1 desc=16 range=0x10000000+65536 category=0 message=1:arena -> 0x7010",
		"regions-register null size=48 compat=0x102 type=1 heap=0x7010 count=1 element=16 out=null: 0x10000000+4096",
		"regions-name null size=40 compat=0x102 count=1 element=32: 1/1/0x10000000=w/0",
		"regions-unregister null size=32 compat=0x102 ref=1 count=1 element=8: 0x10000000",
		"heap-reset null 0x7010",
		"heap-unregister null 0x7010",
	}
	cases := []struct {
		name    string
		defs    []string
		enabled bool
		// log is the lines the fake writes, all of them.
		log []string
	}{
		{"no core init: the NULL domain", []string{"-DNO_CORE"}, true, nullDomain},
		{"no nvtxDomainCreateA: the NULL domain", []string{"-DNO_DOMAIN"}, true, append(append([]string{}, coreInitLog...), nullDomain...)},
		{"no reset and no naming", []string{"-DNO_OPTIONAL"}, true, append(append([]string{}, coreInitLog...),
			"domain-create cudapool",
			extInitLog,
			"heap-register cudapool size=48 compat=0x102 usage=1 type=1 desc=16 range=0x10000000+65536 category=0 message=1:arena -> 0x7010",
			"regions-register cudapool size=48 compat=0x102 type=1 heap=0x7010 count=1 element=16 out=null: 0x10000000+4096",
			"regions-unregister cudapool size=32 compat=0x102 ref=1 count=1 element=8: 0x10000000",
			"heap-unregister cudapool 0x7010",
		)},
		{"no extension", []string{"-DNO_EXT"}, false, coreInitLog},
		{"the extension's init fails", []string{"-DEXT_FAILS"}, false, append(append([]string{}, coreInitLog...), "domain-create cudapool", extInitLog)},
		{"heaps only", []string{"-DHEAPS_ONLY"}, false, append(append([]string{}, coreInitLog...), "domain-create cudapool", extInitLog)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			so := fakeTool(t, c.defs...)
			l := annotatedLibrary(t, so)
			require.Equal(t, c.enabled, l.AnnotationsEnabled(0))
			useAnnotations(t, l)
			assert.Equal(t, c.log, toolLog(t, so))
			if strings.Contains(c.name, "fails") {
				for i := 1; i < len(memSlots); i++ {
					require.Equal(t, uintptr(extDisabled), memSlots[i], "slot %d: a failed init disables every slot", i)
				}
			}
		})
	}
}

// useAnnotations makes every annotation call once, each of which must
// succeed, tool or not.
func useAnnotations(t *testing.T, l *library) {
	t.Helper()
	h, err := l.MemHeapRegister(0, arena, 64<<10, "arena")
	require.NoError(t, err)
	require.NoError(t, l.MemRegionsRegister(h, []MemRegion{{Addr: arena, Size: 4096, Name: "w"}}))
	require.NoError(t, l.MemRegionsUnregister(h, []DevicePtr{arena}))
	require.NoError(t, l.MemHeapReset(h))
	require.NoError(t, l.MemHeapUnregister(h))
}

func TestAnnotationsWithoutATool(t *testing.T) {
	t.Run("no library", func(t *testing.T) {
		so := fakeTool(t, "-DNO_CORE", "-DNO_EXT")
		assert.Nil(t, loadNVTX(so))
		assert.False(t, mapped(t, so), "a library with no entry point is unloaded")
	})
	t.Run("a path that does not load", func(t *testing.T) {
		l := annotatedLibrary(t, "/nonexistent/libinjection.so")
		assert.False(t, l.AnnotationsEnabled(0))
		useAnnotations(t, l)
	})
	t.Run("variable unset", func(t *testing.T) {
		t.Setenv(injectionEnv(), "")
		require.NoError(t, os.Unsetenv(injectionEnv()))
		freshProcessTool(t)
		l := newRecorderLibrary(newRecorder(), nil)
		assert.False(t, l.AnnotationsEnabled(0))
		useAnnotations(t, l)
		_, err := l.MemHeapRegister(0, arena, 0, "empty")
		assert.ErrorIs(t, err, ErrInvalidValue, "arguments are checked all the same")
	})
}

// TestAnnotationsReadTheEnvironmentOnce: the first annotation of any lib
// attaches the tool NVTX_INJECTION64_PATH names, and every library after uses
// it, whatever the variable says by then.
func TestAnnotationsReadTheEnvironmentOnce(t *testing.T) {
	so := fakeTool(t)
	t.Setenv(injectionEnv(), so)
	freshProcessTool(t)
	first := newRecorderLibrary(newRecorder(), nil)
	require.True(t, first.AnnotationsEnabled(0))
	t.Setenv(injectionEnv(), "/nonexistent/libinjection.so")
	second := newRecorderLibrary(newRecorder(), nil)
	require.True(t, second.AnnotationsEnabled(0))
	_, err := second.MemHeapRegister(0, arena, 4096, "second")
	require.NoError(t, err)
	_, err = first.MemHeapRegister(0, arena, 4096, "first")
	require.NoError(t, err, "each library keeps its own heaps")
	log := toolLog(t, so)
	require.Len(t, log, len(coreInitLog)+4, "one init: %q", log)
	assert.Equal(t, extInitLog, log[len(coreInitLog)+1])
	assert.Contains(t, log[len(log)-2], "message=1:second")
	assert.Contains(t, log[len(log)-1], "message=1:first")
}

// TestAnnotationsMisuse: each misuse is an error wrapping ErrInvalidValue
// that names the NVTX function, changes nothing and reaches no tool.
func TestAnnotationsMisuse(t *testing.T) {
	cases := []struct {
		name string
		fn   string
		call func(l *library, h MemHeap) error
		why  string
	}{
		{"unknown heap", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h+10, []MemRegion{{Addr: arena, Size: 1}})
		}, "is not registered"},
		{"region past its heap", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h, []MemRegion{{Addr: arena + 0x1000, Size: 8}, {Addr: arena + 0xff00, Size: 0x200}})
		}, "is not inside heap"},
		{"region before its heap", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h, []MemRegion{{Addr: arena - 1, Size: 8}})
		}, "is not inside heap"},
		{"empty region", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h, []MemRegion{{Addr: arena + 0x1000, Size: 0, Name: "nothing"}})
		}, "is empty"},
		{"start of a registered region", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h, []MemRegion{{Addr: arena, Size: 16}})
		}, "starts where registered region"},
		{"two starts in a batch", "nvtxMemRegionsRegister", func(l *library, h MemHeap) error {
			return l.MemRegionsRegister(h, []MemRegion{{Addr: arena + 0x1000, Size: 16}, {Addr: arena + 0x1000, Size: 32}})
		}, "two regions start at"},
		{"overlapping heaps", "nvtxMemHeapRegister", func(l *library, _ MemHeap) error {
			_, err := l.MemHeapRegister(0, arena+0x8000, 64<<10, "overlap")
			return err
		}, "overlaps heap"},
		{"heap at 0", "nvtxMemHeapRegister", func(l *library, _ MemHeap) error {
			_, err := l.MemHeapRegister(0, 0, 4096, "null")
			return err
		}, "at address 0"},
		{"empty heap", "nvtxMemHeapRegister", func(l *library, _ MemHeap) error {
			_, err := l.MemHeapRegister(0, other, 0, "empty")
			return err
		}, "is empty"},
		{"unregister an unknown region", "nvtxMemRegionsUnregister", func(l *library, h MemHeap) error {
			return l.MemRegionsUnregister(h, []DevicePtr{arena, arena + 8})
		}, "no region of heap"},
		{"unregister twice in a batch", "nvtxMemRegionsUnregister", func(l *library, h MemHeap) error {
			return l.MemRegionsUnregister(h, []DevicePtr{arena, arena})
		}, "unregistered twice"},
		{"name an unknown region", "nvtxMemRegionsName", func(l *library, h MemHeap) error {
			return l.MemRegionsName(h, []MemRegion{{Addr: arena, Name: "a"}, {Addr: arena + 4, Name: "b"}})
		}, "no region of heap"},
		{"reset an unknown heap", "nvtxMemHeapReset", func(l *library, h MemHeap) error { return l.MemHeapReset(h + 1) }, "is not registered"},
		{"unregister an unknown heap", "nvtxMemHeapUnregister", func(l *library, h MemHeap) error { return l.MemHeapUnregister(0) }, "is not registered"},
	}
	for _, tool := range []bool{false, true} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/tool=%v", c.name, tool), func(t *testing.T) {
				so := ""
				if tool {
					so = fakeTool(t)
				}
				l := annotatedLibrary(t, so)
				require.Equal(t, tool, l.AnnotationsEnabled(0))
				h, err := l.MemHeapRegister(0, arena, 64<<10, "arena")
				require.NoError(t, err)
				require.NoError(t, l.MemRegionsRegister(h, []MemRegion{{Addr: arena, Size: 64}}))
				var before []string
				if tool {
					before = toolLog(t, so)
				}

				var err2 error
				require.NotPanics(t, func() { err2 = c.call(l, h) })
				require.ErrorIs(t, err2, ErrInvalidValue)
				assert.True(t, strings.HasPrefix(err2.Error(), "cudart: "+c.fn+": cudaErrorInvalidValue (1): invalid argument: "), err2.Error())
				assert.Contains(t, err2.Error(), c.why)
				if tool {
					assert.Equal(t, before, toolLog(t, so), "the tool hears nothing of a refused call")
				}

				regions, err := l.ann.reg.Regions(uint64(h))
				require.NoError(t, err, "the heap is still registered")
				assert.Len(t, regions, 1, "a refused batch registers nothing")
				require.NoError(t, l.MemRegionsUnregister(h, []DevicePtr{arena}), "nor unregisters anything")
			})
		}
	}
}

// TestAnnotationsOnANilOrClosedLib: every annotation is an error wrapping
// ErrClosed.
func TestAnnotationsOnANilOrClosedLib(t *testing.T) {
	closed := newRecorderLibrary(newRecorder(), nil)
	require.NoError(t, closed.Close())
	for name, l := range map[string]*library{"nil": nil, "closed": closed} {
		t.Run(name, func(t *testing.T) {
			assert.False(t, l.AnnotationsEnabled(0))
			calls := map[string]func() error{
				"nvtxMemHeapRegister": func() error {
					h, err := l.MemHeapRegister(0, arena, 4096, "a")
					assert.Zero(t, h)
					return err
				},
				"nvtxMemHeapUnregister":    func() error { return l.MemHeapUnregister(1) },
				"nvtxMemHeapReset":         func() error { return l.MemHeapReset(1) },
				"nvtxMemRegionsRegister":   func() error { return l.MemRegionsRegister(1, []MemRegion{{Addr: arena, Size: 1}}) },
				"nvtxMemRegionsUnregister": func() error { return l.MemRegionsUnregister(1, []DevicePtr{arena}) },
				"nvtxMemRegionsName":       func() error { return l.MemRegionsName(1, []MemRegion{{Addr: arena, Name: "a"}}) },
			}
			for fn, call := range calls {
				err := call()
				assert.ErrorIs(t, err, ErrClosed, fn)
				assert.EqualError(t, err, "cudart: library closed: "+fn)
			}
		})
	}
}

// TestAnnotationsConcurrently: heaps and regions annotated from many
// goroutines reach the tool whole, each batch once.
func TestAnnotationsConcurrently(t *testing.T) {
	so := fakeTool(t)
	l := annotatedLibrary(t, so)
	require.True(t, l.AnnotationsEnabled(0))
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			base := arena + DevicePtr(w)<<20
			h, err := l.MemHeapRegister(0, base, 1<<20, fmt.Sprintf("heap%d", w))
			if !assert.NoError(t, err) {
				return
			}
			for i := range rounds {
				p := base + DevicePtr(i)<<12
				assert.NoError(t, l.MemRegionsRegister(h, []MemRegion{{Addr: p, Size: 4096, Name: fmt.Sprintf("r%d", i)}}))
				assert.NoError(t, l.MemRegionsUnregister(h, []DevicePtr{p}))
			}
			assert.NoError(t, l.MemHeapUnregister(h))
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, line := range toolLog(t, so) {
		count[strings.Fields(line)[0]]++
	}
	assert.Equal(t, workers, count["heap-register"])
	assert.Equal(t, workers*rounds, count["regions-register"])
	assert.Equal(t, workers*rounds, count["regions-name"])
	assert.Equal(t, workers*rounds, count["regions-unregister"])
	assert.Equal(t, workers, count["heap-unregister"])
}

// BenchmarkAnnotationsOff is what an annotated buffer costs a pool when no
// tool listens: one region registered and unregistered.
func BenchmarkAnnotationsOff(b *testing.B) {
	l := newRecorderLibrary(newRecorder(), nil)
	l.ann.once.Do(func() { l.ann.tool = loadNVTX("") })
	h, err := l.MemHeapRegister(0, arena, 1<<20, "arena")
	require.NoError(b, err)
	region := []MemRegion{{Addr: arena + 4096, Size: 256, Name: "buffer"}}
	addr := []DevicePtr{region[0].Addr}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.MemRegionsRegister(h, region); err != nil {
			b.Fatal(err)
		}
		if err := l.MemRegionsUnregister(h, addr); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAnnotationsOffAllocateNothing: with no tool, the calls a pool makes
// per buffer allocate nothing.
func TestAnnotationsOffAllocateNothing(t *testing.T) {
	l := annotatedLibrary(t, "")
	h, err := l.MemHeapRegister(0, arena, 1<<20, "arena")
	require.NoError(t, err)
	region := []MemRegion{{Addr: arena + 4096, Size: 256, Name: "buffer"}}
	addr := []DevicePtr{region[0].Addr}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_ = l.MemRegionsRegister(h, region)
		_ = l.MemRegionsName(h, region)
		_ = l.MemRegionsUnregister(h, addr)
	}))
}

// TestAnnotationsSelectTheHeapsDevice: with a tool listening, every call
// about a heap makes the heap's device current first, since the tool finds
// the memory's context on the calling thread; a device that cannot be
// selected fails the call, which then changes nothing.
func TestAnnotationsSelectTheHeapsDevice(t *testing.T) {
	so := fakeTool(t)
	rec := newRecorder()
	l := newRecorderLibrary(rec, nil)
	l.ann.once.Do(func() { l.ann.tool = loadNVTX(so) })
	last := func() int { return rec.selects[len(rec.selects)-1] }

	require.True(t, l.AnnotationsEnabled(1))
	assert.Equal(t, 1, last())
	h, err := l.MemHeapRegister(1, arena, 64<<10, "arena")
	require.NoError(t, err)
	assert.Equal(t, 1, last())
	for _, step := range []struct {
		name string
		call func() error
	}{
		{"register", func() error { return l.MemRegionsRegister(h, []MemRegion{{Addr: arena, Size: 256, Name: "a"}}) }},
		{"name", func() error { return l.MemRegionsName(h, []MemRegion{{Addr: arena, Name: "b"}}) }},
		{"unregister", func() error { return l.MemRegionsUnregister(h, []DevicePtr{arena}) }},
		{"reset", func() error { return l.MemHeapReset(h) }},
	} {
		rec.calls, rec.selects = nil, nil
		require.NoError(t, step.call(), step.name)
		assert.Equal(t, []string{"cudaSetDevice@-1"}, rec.calls, step.name)
		assert.Equal(t, []int{1}, rec.selects, step.name)
	}

	rec.codes[calls.SetDevice] = 101
	assert.False(t, l.AnnotationsEnabled(7))
	_, err = l.MemHeapRegister(7, other, 4096, "refused")
	assert.ErrorIs(t, err, ErrInvalidDevice)
	assert.ErrorContains(t, err, "cudaSetDevice(7) for nvtxMemHeapRegister")
	err = l.MemRegionsRegister(h, []MemRegion{{Addr: arena, Size: 256}})
	assert.ErrorIs(t, err, ErrInvalidDevice)
	delete(rec.codes, calls.SetDevice)
	assert.ErrorIs(t, l.MemRegionsUnregister(h, []DevicePtr{arena}), ErrInvalidValue, "the refused register registered nothing")
	again, err := l.MemHeapRegister(7, other, 4096, "again")
	require.NoError(t, err, "the refused heap was not registered")
	require.NoError(t, l.MemHeapUnregister(again))
	require.NoError(t, l.MemHeapUnregister(h))
	assert.Equal(t, 1, last(), "unregistered with its own device current")
}
