package vmem_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// shape is what a caller sees of an Arena or a Vector.
type shape struct {
	ptr            cudart.DevicePtr
	size, reserved uint64
}

// subject is a growth under test, set up on a fresh fake with data written.
type subject struct {
	grow  func() error
	shape func() shape
	data  []byte // written at ptr before the growth
	close func() error
	// unblock frees the range a case reserved after the vector's, to make
	// it move; nil where none was. It runs at cleanup in any case.
	unblock func()
}

// checkData asserts that the data written before the growth reads back
// from where the owner now starts.
func (s *subject) checkData(t *testing.T, f *cudarttest.Fake) {
	t.Helper()
	if len(s.data) > 0 {
		assert.Equal(t, s.data, get(t, f, 0, s.shape().ptr, uint64(len(s.data)), g), "the data is intact")
	}
}

// growthCase builds a subject on f: the same calls every time, so that the
// nth call of its growth is the same call in every run.
type growthCase struct {
	name    string
	devices int
	setup   func(t *testing.T, f *cudarttest.Fake) *subject
}

func arenaCase(name string, before, after uint64, opts ...vmem.Option) growthCase {
	return growthCase{name: name, devices: 2, setup: func(t *testing.T, f *cudarttest.Fake) *subject {
		a, err := vmem.NewArena(f, 0, 16*g, opts...)
		require.NoError(t, err)
		s := &subject{
			grow:  func() error { return a.Ensure(after) },
			shape: func() shape { return shape{a.Base(), a.Mapped(), a.Max()} },
			close: a.Close,
		}
		if before > 0 {
			require.NoError(t, a.Ensure(before))
			s.data = pattern(1, before)
			put(t, f, 0, a.Base(), s.data, g)
		}
		return s
	}}
}

// vectorCase grows a vector through sizes, optionally blocks the hint, and
// then tests grow (or reserve, when reserve is set) to last.
func vectorCase(name string, sizes []uint64, blocked, reserve bool, last uint64, opts ...vmem.Option) growthCase {
	return growthCase{name: name, devices: 2, setup: func(t *testing.T, f *cudarttest.Fake) *subject {
		v, err := vmem.NewVector(f, 0, opts...)
		require.NoError(t, err)
		s := &subject{
			grow:  func() error { return v.Grow(last) },
			shape: func() shape { return shape{v.Ptr(), v.Size(), v.Reserved()} },
			close: v.Close,
		}
		if reserve {
			s.grow = func() error { return v.Reserve(last) }
		}
		for _, n := range sizes {
			require.NoError(t, v.Grow(n))
		}
		if v.Size() > 0 {
			s.data = pattern(2, v.Size())
			put(t, f, 0, v.Ptr(), s.data, g)
		}
		if blocked {
			s.unblock = sync.OnceFunc(block(t, f, v))
			t.Cleanup(s.unblock)
		}
		return s
	}}
}

var growthCases = []growthCase{
	arenaCase("arena first growth", 0, 3*g),
	arenaCase("arena second growth", 2*g, 5*g),
	arenaCase("arena with a peer", 2*g, 5*g, vmem.WithPeers(1)),
	arenaCase("arena in chunks", 4*g, 5*g, vmem.WithChunk(4*g)),
	vectorCase("vector first growth", nil, false, false, 2*g),
	vectorCase("vector grows in place", []uint64{g, 2 * g}, false, false, 4*g),
	vectorCase("vector moves", []uint64{g, 2 * g}, true, false, 4*g),
	vectorCase("vector with a peer moves", []uint64{g, 2 * g}, true, false, 4*g, vmem.WithPeers(1)),
	vectorCase("vector reserve moves", []uint64{g, 2 * g}, true, true, 8*g),
	vectorCase("vector growth spans two reservations", []uint64{g, 2 * g}, false, false, 8*g),
}

// recordGrowth runs c's growth without faults and returns its calls and the
// shape it leaves.
func recordGrowth(t *testing.T, c growthCase) ([]string, shape) {
	t.Helper()
	f := newFake(t, devices(c.devices)...)
	s := c.setup(t, f)
	f.ResetCalls()
	require.NoError(t, s.grow())
	calls, grown := f.Calls(), s.shape()
	require.NoError(t, s.close())
	require.NotEmpty(t, calls)
	return calls, grown
}

// assertGrown checks that a growth that succeeded despite a fault is
// complete. A vector whose hinted reservation failed moved instead, so only
// its size and reservation are compared.
func assertGrown(t *testing.T, want, got shape) {
	t.Helper()
	assert.Equal(t, want.size, got.size, "a growth that succeeds despite the fault is complete")
	assert.Equal(t, want.reserved, got.reserved)
}

// TestGrowthFailingAtEveryCallChangesNothing fails each CUDA call of each
// growth in turn. A growth either fails and leaves its owner exactly as it
// was (same shape, same live CUDA objects, data readable), or, where the
// failed call has a fallback or only cleans up what the growth gave up,
// succeeds as it would have; either way Close leaves nothing behind (the
// fake's leak check runs at the end of each subtest).
func TestGrowthFailingAtEveryCallChangesNothing(t *testing.T) {
	for _, c := range growthCases {
		t.Run(c.name, func(t *testing.T) {
			calls, grown := recordGrowth(t, c)
			failed := 0
			for i := range calls {
				t.Run(fmt.Sprintf("call %d %s", i+1, calls[i]), func(t *testing.T) {
					f := newFake(t, devices(c.devices)...)
					s := c.setup(t, f)
					before, live := s.shape(), f.Live()
					require.NoError(t, f.FailNth(i+1, 2))
					err := s.grow()
					f.ClearFaults()
					if err != nil {
						failed++
						assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
						assert.Equal(t, before, s.shape(), "a failed growth changes nothing")
						assert.Equal(t, live, f.Live(), "a failed growth leaves no CUDA object behind")
					} else {
						assertGrown(t, grown, s.shape())
					}
					s.checkData(t, f)
					require.NoError(t, s.close())
				})
			}
			assert.Positive(t, failed, "some fault must fail the growth, or the sweep tests nothing")
		})
	}
}

// TestGrowthWhoseUndoFailsLeaksNothing fails a call of the growth and the
// call after it, which is the first step of undoing it when the growth
// fails. What could not be undone is retried, and Close gives back
// everything.
func TestGrowthWhoseUndoFailsLeaksNothing(t *testing.T) {
	for _, c := range growthCases {
		t.Run(c.name, func(t *testing.T) {
			calls, grown := recordGrowth(t, c)
			for i := range calls {
				t.Run(fmt.Sprintf("call %d %s", i+1, calls[i]), func(t *testing.T) {
					f := newFake(t, devices(c.devices)...)
					s := c.setup(t, f)
					before := s.shape()
					require.NoError(t, f.FailNth(i+1, 2))
					require.NoError(t, f.FailNth(i+2, 2))
					err := s.grow()
					f.ClearFaults()
					if err != nil {
						assert.Equal(t, before, s.shape(), "a failed growth changes nothing the caller sees")
					} else {
						assertGrown(t, grown, s.shape())
					}
					s.checkData(t, f)
					require.NoError(t, s.close(), "Close retries what could not be undone")
				})
			}
		})
	}
}

// TestCloseFailingAtEveryCallIsRetried grows each case's arena or vector,
// records the CUDA calls of its Close, then fails each in turn: Close
// reports the failure, is called again until it returns nil, each call
// giving back something more, and then nothing is left.
func TestCloseFailingAtEveryCallIsRetried(t *testing.T) {
	for _, c := range growthCases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, devices(c.devices)...)
			s := c.setup(t, f)
			require.NoError(t, s.grow())
			f.ResetCalls()
			require.NoError(t, s.close())
			calls := f.Calls()
			require.NotEmpty(t, calls)
			for i := range calls {
				t.Run(fmt.Sprintf("call %d %s", i+1, calls[i]), func(t *testing.T) {
					f := newFake(t, devices(c.devices)...)
					s := c.setup(t, f)
					require.NoError(t, s.grow())
					f.ResetCalls()
					require.NoError(t, f.FailNth(i+1, 2))
					err := s.close()
					f.ClearFaults()
					require.ErrorIs(t, err, cudart.ErrMemoryAllocation, "the failure reaches the caller")
					for tries := 1; err != nil; tries++ {
						require.Less(t, tries, len(calls), "Close keeps failing: %v", err)
						err = s.close()
					}
					require.NoError(t, s.close())
					if s.unblock != nil {
						s.unblock()
					}
					require.True(t, f.Live().Empty(), "Close returned nil, yet: %v", f.CheckLeaks())
				})
			}
		})
	}
}
