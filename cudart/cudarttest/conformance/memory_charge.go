package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
)

// The units CUDA takes device memory in: 2 MiB chunks for cudaMalloc,
// 32 MiB segments for cudaMallocAsync's default pool.
const (
	chargeChunk   = 2 * mib
	chargeSegment = 32 * mib
)

// chargeRows are the allocations each charge test makes, count of size.
var chargeRows = []struct {
	count int
	size  uint64
}{
	{1000, 1},
	{1000, 1000},
	{1000, 4 * kib},
	{1000, 64 * kib},
	{20, mib},
	{20, mib + 1},
	{20, 2*mib - 1},
	{20, 2*mib + 1},
	{20, 3 * mib},
}

// allocator is cudaMalloc and cudaFree, or cudaMallocAsync and
// cudaFreeAsync on the legacy stream with a synchronisation, and the unit
// its small allocations share.
type allocator struct {
	unit   uint64
	malloc func(size uint64) (cudart.DevicePtr, error)
	free   func(ptrs []cudart.DevicePtr) error
}

// testMallocCharge: cudaMalloc charges free memory as CUDA does. An
// allocation of up to 2 MiB, rounded up to 512 bytes, shares a 2 MiB chunk
// with others; a larger one takes its own memory in 2 MiB granules; a chunk
// comes back when its last allocation is freed. The chunk already open
// when a row starts may hold some of its allocations, so a row of small
// ones may cost up to one chunk less than a fresh set of chunks would, and
// never more. It expects no other process to allocate on the device
// meanwhile.
func (s *suite) testMallocCharge(t *testing.T) {
	s.malloc(t, 1) // opens a chunk, as a program's first cudaMalloc does
	s.testCharge(t, allocator{
		unit:   chargeChunk,
		malloc: func(size uint64) (cudart.DevicePtr, error) { return s.rt.Malloc(s.dev, size) },
		free: func(ptrs []cudart.DevicePtr) error {
			var errs []error
			for _, p := range ptrs {
				errs = append(errs, s.rt.Free(s.dev, p))
			}
			return errors.Join(errs...)
		},
	})
}

// testMallocAsyncCharge: cudaMallocAsync charges as cudaMalloc does with
// 32 MiB segments instead of 2 MiB chunks, for allocations of up to 32 MiB,
// under a release threshold of 0 (a segment goes back at the
// synchronisation after its last allocation's free).
func (s *suite) testMallocAsyncCharge(t *testing.T, a cudart.AsyncAllocator) {
	st := need[cudart.Streams](t, s.rt)
	old, err := a.MemPoolReleaseThreshold(s.dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetMemPoolReleaseThreshold(s.dev, 0); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.SetMemPoolReleaseThreshold(s.dev, old); err != nil {
			t.Error(err)
		}
	}()
	free := func(ptrs []cudart.DevicePtr) error {
		var errs []error
		for _, p := range ptrs {
			errs = append(errs, a.FreeAsync(s.dev, p, 0))
		}
		return errors.Join(append(errs, st.StreamSynchronize(s.dev, 0))...)
	}
	first, err := a.MallocAsync(s.dev, 1, 0) // opens a segment
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := free([]cudart.DevicePtr{first}); err != nil {
			t.Error(err)
		}
	}()
	s.testCharge(t, allocator{
		unit:   chargeSegment,
		malloc: func(size uint64) (cudart.DevicePtr, error) { return a.MallocAsync(s.dev, size, 0) },
		free:   free,
	})
}

// testCharge measures each row of chargeRows with a.
func (s *suite) testCharge(t *testing.T, a allocator) {
	for _, r := range chargeRows {
		t.Run(fmt.Sprintf("%dx%dB", r.count, r.size), func(t *testing.T) {
			most := freshCharge(r.count, r.size, a.unit)
			least := most
			if r.size <= a.unit-512 {
				least = most - min(most, a.unit)
			}
			charged, returned, err := s.chargeOf(a, r.count, r.size)
			if err != nil {
				t.Fatal(err)
			}
			if charged < least || charged > most {
				t.Errorf("%d allocations of %d B took %d B of free memory, want %d B to %d B", r.count, r.size, charged, least, most)
			}
			if returned != charged {
				t.Errorf("freeing them gave back %d B of the %d B they took", returned, charged)
			}
		})
	}
}

// freshCharge is what count allocations of size bytes take from free
// memory with no chunk of unit bytes open: small ones share chunks, larger
// ones take 2 MiB granules.
func freshCharge(count int, size, unit uint64) uint64 {
	n := (size + 511) &^ 511
	if n > unit {
		return uint64(count) * ((size + chargeChunk - 1) &^ (chargeChunk - 1))
	}
	perChunk := unit / n
	return (uint64(count) + perChunk - 1) / perChunk * unit
}

// chargeOf allocates count buffers of size bytes with a, frees them, and
// reports the drop in free memory and how much of it came back.
func (s *suite) chargeOf(a allocator, count int, size uint64) (charged, returned uint64, err error) {
	before, _, err := s.rt.MemGetInfo(s.dev)
	if err != nil {
		return 0, 0, err
	}
	ptrs := make([]cudart.DevicePtr, 0, count)
	for range count {
		p, err := a.malloc(size)
		if err != nil {
			return 0, 0, errors.Join(err, a.free(ptrs))
		}
		ptrs = append(ptrs, p)
	}
	during, _, err := s.rt.MemGetInfo(s.dev)
	if err != nil {
		return 0, 0, errors.Join(err, a.free(ptrs))
	}
	if err := a.free(ptrs); err != nil {
		return 0, 0, err
	}
	after, _, err := s.rt.MemGetInfo(s.dev)
	if err != nil {
		return 0, 0, err
	}
	if during > before || during > after {
		return 0, 0, fmt.Errorf("free memory rose while allocating: %d B, %d B, %d B", before, during, after)
	}
	return before - during, after - during, nil
}
