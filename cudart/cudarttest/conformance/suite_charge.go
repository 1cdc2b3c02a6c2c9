package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
)

// chargeChunk is the unit CUDA takes device memory in for cudaMalloc.
const chargeChunk = 2 * mib

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
	for _, r := range []struct {
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
	} {
		t.Run(fmt.Sprintf("%dx%dB", r.count, r.size), func(t *testing.T) {
			most := freshCharge(r.count, r.size)
			least := most
			if r.size <= chargeChunk-512 {
				least = most - min(most, chargeChunk)
			}
			charged, returned, err := s.chargeOf(r.count, r.size)
			if err != nil {
				t.Fatal(err)
			}
			if charged < least || charged > most {
				t.Errorf("%d cudaMalloc(%d) took %d B of free memory, want %d B to %d B", r.count, r.size, charged, least, most)
			}
			if returned != charged {
				t.Errorf("freeing them gave back %d B of the %d B they took", returned, charged)
			}
		})
	}
}

// freshCharge is what count allocations of size bytes take from free
// memory with no chunk open.
func freshCharge(count int, size uint64) uint64 {
	n := (size + 511) &^ 511
	if n > chargeChunk {
		return uint64(count) * ((size + chargeChunk - 1) &^ (chargeChunk - 1))
	}
	perChunk := chargeChunk / n
	return (uint64(count) + perChunk - 1) / perChunk * chargeChunk
}

// chargeOf allocates count buffers of size bytes, frees them, and reports
// the drop in free memory and how much of it came back.
func (s *suite) chargeOf(count int, size uint64) (charged, returned uint64, err error) {
	before, _, err := s.rt.MemGetInfo(s.dev)
	if err != nil {
		return 0, 0, err
	}
	ptrs := make([]cudart.DevicePtr, 0, count)
	freeAll := func() error {
		var errs []error
		for _, p := range ptrs {
			errs = append(errs, s.rt.Free(s.dev, p))
		}
		ptrs = ptrs[:0]
		return errors.Join(errs...)
	}
	for range count {
		p, err := s.rt.Malloc(s.dev, size)
		if err != nil {
			return 0, 0, errors.Join(err, freeAll())
		}
		ptrs = append(ptrs, p)
	}
	during, _, err := s.rt.MemGetInfo(s.dev)
	if err != nil {
		return 0, 0, errors.Join(err, freeAll())
	}
	if err := freeAll(); err != nil {
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
