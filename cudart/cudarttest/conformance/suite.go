package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/opt"
)

// Option configures TestRuntime. Options are values made by the functions
// of this package; a nil one fails the test with an error wrapping
// ErrInvalidOption.
type Option interface{ opt.Option[config] }

// option is an Option made from a function of this package.
type option = opt.Func[config]

type config struct {
	dev    int
	groups []Group
}

// ErrInvalidOption means an option of TestRuntime was refused: the error
// wrapping it says which.
var ErrInvalidOption = errors.New("conformance: invalid option")

// OnDevice runs the suite on device ordinal d (default 0), which must be 0
// or more.
func OnDevice(d int) Option {
	return option(func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: OnDevice(%d): a device ordinal is 0 or more", ErrInvalidOption, d)
		}
		c.dev = d
		return nil
	})
}

// Group is a group of subtests that a library built on CUDA adds to the
// suite: cuBLAS's are in cublas/conformance. Run runs its subtests on
// device of rt, as the suite's own groups run.
type Group struct {
	Name string
	Run  func(t *testing.T, rt cudart.Runtime, device int)
}

// WithGroups adds groups to the suite, run in the order given after the
// suite's own and before Reset, which comes last as it destroys what the
// device holds: a library's use of the device is followed by a reset in
// the same process, as it must be on a GPU. A group with no name or no Run
// is refused.
func WithGroups(gs ...Group) Option {
	return option(func(c *config) error {
		for i, g := range gs {
			if g.Name == "" || g.Run == nil {
				return fmt.Errorf("%w: WithGroups: group %d (%q) needs a name and a Run", ErrInvalidOption, i, g.Name)
			}
		}
		c.groups = append(c.groups, gs...)
		return nil
	})
}

// suite is one run of TestRuntime.
type suite struct {
	rt  cudart.Runtime
	dev int
}

// TestRuntime checks that rt behaves as CUDA does, in subtests grouped by
// capability: device info, malloc and free, every copy kind, memset, the
// errors CUDA reports, pinned host memory, host registration, streams,
// managed memory, stream-ordered allocation, device limits and versions,
// what CUDA tells of an address, virtual memory and peer access, kernels
// launched from PTX, events, work that completes while the host polls
// (cudaStreamQuery, cudaEventQuery), stream capture into graphs, the device-side
// malloc heap, memory annotations, the groups of libraries built on CUDA
// that WithGroups adds, and device reset, which comes last as it destroys
// what the device holds. On a runtime that implements
// RegisterKernel, as the fake does, the suite registers Go implementations
// of its PTX kernels first. A group whose interface rt does not implement
// is skipped.
//
// It asserts only documented CUDA behaviour, so it holds for real CUDA on a
// GPU and for the fake alike. It uses a few MiB of device memory and frees
// everything it allocates, even when an assertion fails.
func TestRuntime(t *testing.T, rt cudart.Runtime, opts ...Option) {
	var c config
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		t.Fatal(err)
	}
	s := &suite{rt: rt, dev: c.dev}
	count, err := rt.DeviceCount()
	require.NoError(t, err, calls.GetDeviceCount)
	require.Less(t, s.dev, count, "the suite's device must exist")

	t.Run("DeviceInfo", s.testDeviceInfo)
	t.Run("MallocGranularity", s.testMallocGranularity)
	t.Run("MallocCharge", s.testMallocCharge)
	t.Run("MallocAsyncCharge", with(s, s.testMallocAsyncCharge))
	t.Run("MallocFree", s.testMallocFree)
	t.Run("Memcpy", s.testMemcpy)
	t.Run("Memset", s.testMemset)
	t.Run("Errors", s.testErrors)
	t.Run("PinnedHost", s.testPinnedHost)
	t.Run("HostAlloc", with(s, s.testHostAlloc))
	t.Run("HostRegister", with(s, s.testHostRegister))
	t.Run("Streams", with(s, s.testStreams))
	t.Run("Managed", with(s, s.testManaged))
	t.Run("Async", with(s, s.testAsync))
	t.Run("Device", with(s, s.testDevice))
	t.Run("PointerAttributes", with(s, s.testPointerAttributes))
	t.Run("VirtualMemory", s.testVirtualMemory)
	t.Run("Kernels", s.testKernels)
	t.Run("Events", with(s, s.testEvents))
	t.Run("Polling", with(s, s.testPolling))
	t.Run("Graphs", with(s, s.testGraphs))
	t.Run("CapturedEvent", with(s, s.testCapturedEvent))
	t.Run("CaptureImplicit", with(s, s.testCaptureImplicit))
	t.Run("GraphNodes", with(s, s.testGraphNodes))
	t.Run("MallocHeap", with(s, s.testMallocHeap))
	t.Run("Annotations", with(s, s.testAnnotations))
	for _, g := range c.groups {
		t.Run(g.Name, func(t *testing.T) { g.Run(t, rt, s.dev) })
	}
	t.Run("Reset", with(s, s.testReset))
}

// with is test, a group of the suite about rt's capability T, as a subtest
// that skips where rt lacks T.
func with[T any](s *suite, test func(*testing.T, T)) func(*testing.T) {
	return func(t *testing.T) { test(t, need[T](t, s.rt)) }
}

// once runs free, which makes call c, at cleanup unless the returned function
// ran it first, so that a test frees explicitly where it checks the effect
// and still frees everything when an assertion stops it early.
func once(t testing.TB, c calls.Call, free func() error) (freeNow func()) {
	done := false
	run := func() {
		if !done {
			done = true
			require.NoError(t, free(), c)
		}
	}
	t.Cleanup(func() {
		if !done {
			done = true
			if err := free(); err != nil {
				t.Errorf("%s at cleanup: %v", c, err)
			}
		}
	})
	return run
}

// malloc allocates device memory freed at cleanup.
func (s *suite) malloc(t testing.TB, n uint64) cudart.DevicePtr {
	t.Helper()
	p, err := s.rt.Malloc(s.dev, n)
	require.NoError(t, err, calls.Malloc)
	require.NotZero(t, p, calls.Malloc)
	once(t, calls.Free, func() error { return s.rt.Free(s.dev, p) })
	return p
}

// pattern returns n pseudo-random bytes: each copy test uses its own seed, so
// a copy of the wrong bytes shows.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// read copies n bytes of device memory at p to a new slice.
func (s *suite) read(t testing.TB, p cudart.DevicePtr, n uint64) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.HostMem(b), cudart.DeviceMem(p, n), cudart.DeviceToHost))
	return b
}

// write copies b to device memory at p.
func (s *suite) write(t testing.TB, p cudart.DevicePtr, b []byte) {
	t.Helper()
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice))
}

// filled reports the index of the first byte of b that is not v, or -1.
func filled(b []byte, v byte) int {
	for i, c := range b {
		if c != v {
			return i
		}
	}
	return -1
}
