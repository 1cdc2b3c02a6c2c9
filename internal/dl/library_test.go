package dl

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// libc is a library every Linux host has, exporting strlen and strnlen.
const libc = "libc.so.6"

func needLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("the tests load %s, Linux's C library", libc)
	}
}

func TestOpenListsEveryPathTried(t *testing.T) {
	paths := []string{"/nonexistent/a/libx.so", "/nonexistent/b/libx.so.1"}
	l, err := Open(paths, []Symbol{{Name: "x"}}, 0)
	assert.Nil(t, l)
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Len(t, f.Tried, len(paths))
	for i, p := range paths {
		assert.True(t, strings.HasPrefix(f.Tried[i], p+": "), "entry %d names %s: %q", i, p, f.Tried[i])
		assert.False(t, strings.HasPrefix(f.Tried[i], p+": "+p), "the path is said once: %q", f.Tried[i])
		assert.Greater(t, len(f.Tried[i]), len(p)+2, "with the loader's message")
	}
	assert.Empty(t, f.Missing, "no library loaded")
	assert.Equal(t, strings.Join(f.Tried, "; "), err.Error())
}

func TestOpenNamesEveryMissingSymbol(t *testing.T) {
	needLinux(t)
	syms := []Symbol{{Name: "strlen"}, {Name: "cudapool_none_a"}, {Name: "cudapool_none_b", Alt: "cudapool_none_c"}, {Name: "cudapool_none_d", Optional: true}}
	l, err := Open([]string{"/nonexistent/libx.so", libc, "libm.so.6"}, syms, 0)
	assert.Nil(t, l)
	var f *Failure
	require.ErrorAs(t, err, &f)
	assert.Equal(t, []string{"cudapool_none_a", "cudapool_none_b"}, f.Missing, "a missing symbol is named by its Name")
	require.Len(t, f.Tried, 2, "the first library that loads ends the search")
	assert.Equal(t, libc+": lacks 2 of the 4 functions needed: cudapool_none_a, cudapool_none_b", f.Tried[1])
}

func TestOpenLooksUpAltFirst(t *testing.T) {
	needLinux(t)
	l, err := Open([]string{"/nonexistent/libx.so", libc}, []Symbol{
		{Name: "strlen", Alt: "strnlen"},
		{Name: "strlen", Alt: "cudapool_none"},
		{Name: "cudapool_none", Optional: true},
	}, Resident)
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, libc, l.Path, "Path is the candidate as named")
	assert.Equal(t, l.Sym("strnlen"), l.Fns[0], "Alt where the library has it")
	assert.Equal(t, l.Sym("strlen"), l.Fns[1], "Name where it has no Alt")
	assert.NotEqual(t, l.Fns[0], l.Fns[1])
	assert.Zero(t, l.Fns[2], "an optional symbol the library lacks")
	assert.Zero(t, l.Sym("cudapool_none"))
	assert.True(t, strings.HasPrefix(l.File(), "/"), "File is the file mapped: %q", l.File())
	assert.Contains(t, l.File(), "libc")
}

func TestCallPassesWordsAndAddresses(t *testing.T) {
	needLinux(t)
	l, err := Open([]string{libc}, []Symbol{{Name: "strlen"}, {Name: "strnlen"}}, Lazy)
	require.NoError(t, err)
	defer l.Close()
	s := CString("cudapool")
	assert.Equal(t, uintptr(8), Call(l.Fns[0], SliceAddr(s)))
	assert.Equal(t, uintptr(4), Call(l.Fns[1], SliceAddr(s), 4))
	runtime.KeepAlive(s)
}

func TestCandidates(t *testing.T) {
	defaults := []string{"libx.so", "libx.so.2"}
	for _, c := range []struct {
		name, option, env string
		defaults          []string
		want              []string
	}{
		{"defaults only", "", "", defaults, []string{"libx.so", "libx.so.2"}},
		{"env first", "", "/env/libx.so", defaults, []string{"/env/libx.so", "libx.so", "libx.so.2"}},
		{"option before env", "/opt/libx.so", "/env/libx.so", defaults, []string{"/opt/libx.so", "/env/libx.so", "libx.so", "libx.so.2"}},
		{"no repeats", "libx.so.2", "libx.so.2", defaults, []string{"libx.so.2", "libx.so"}},
		{"no empty defaults", "", "", []string{"", "libx.so"}, []string{"libx.so"}},
		{"nothing", "", "", nil, []string{}},
	} {
		assert.Equal(t, c.want, Candidates(c.option, c.env, c.defaults...), c.name)
	}
}

// TestCallFromAFrameAllocatesNothing: a call whose arguments are in a heap
// frame, addresses of the frame's own fields among them, allocates nothing,
// as the bindings' hot paths need.
func TestCallFromAFrameAllocatesNothing(t *testing.T) {
	needLinux(t)
	l, err := Open([]string{libc}, []Symbol{{Name: "strnlen"}}, 0)
	require.NoError(t, err)
	defer l.Close()
	f := &struct {
		s    [8]byte
		args [2]uintptr
	}{s: [8]byte{'c', 'u', 'd', 'a', 0}}
	var n uintptr
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() {
		f.args = [2]uintptr{Addr(&f.s), 8}
		n = Call(l.Fns[0], f.args[:]...)
	}))
	assert.Equal(t, uintptr(4), n)
}
