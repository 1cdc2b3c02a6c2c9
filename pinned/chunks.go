package pinned

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// registerChunk bounds one cudaHostRegister call: recent drivers refuse a
// single call of 512 GiB or more. A var so that tests can lower it to
// exercise chunking on small memory.
var registerChunk uint64 = 256 << 30

// split cuts b into pieces of at most registerChunk bytes, in address order.
func split(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(uint64(len(b)), registerChunk)
		out = append(out, b[:n:n])
		b = b[n:]
	}
	return out
}

// registerChunks pins b chunk by chunk and returns the chunks. When a chunk
// fails, the chunks already pinned are unpinned before it returns, so that it
// pins all of b or nothing; should that cleanup fail too, it returns the
// chunks left pinned and the error says so.
func registerChunks(hr cudart.HostRegisterer, device int, b []byte, flags Flags) ([][]byte, error) {
	chunks := split(b)
	for i, c := range chunks {
		if err := hr.HostRegister(device, c, flags.hostRegister()); err != nil {
			err = fmt.Errorf("pinned: cudaHostRegister of chunk %d of %d (%s of %s): %w",
				i+1, len(chunks), bytesize.Format(uint64(len(c))), bytesize.Format(uint64(len(b))), mapCode(err))
			if left, uerr := unregisterChunks(hr, device, chunks[:i]); uerr != nil {
				return left, errors.Join(err, fmt.Errorf("pinned: undoing the chunks already registered: %w", uerr))
			}
			return nil, err
		}
	}
	return chunks, nil
}

// unregisterChunks unpins every chunk, trying them all, and returns the ones
// that are still pinned with their errors joined.
func unregisterChunks(hr cudart.HostRegisterer, device int, chunks [][]byte) ([][]byte, error) {
	var left [][]byte
	var errs []error
	for _, c := range chunks {
		if err := hr.HostUnregister(device, c); err != nil {
			err = mapCode(err)
			if !errors.Is(err, ErrNotRegistered) {
				left = append(left, c)
			}
			errs = append(errs, fmt.Errorf("pinned: cudaHostUnregister of %s at 0x%x: %w", bytesize.Format(uint64(len(c))), addr(c), err))
		}
	}
	return left, errors.Join(errs...)
}

// devicePointer is the device address of mapped chunks. Each chunk is its
// own registration and could be mapped anywhere, so one address for all of
// them holds only when the chunks' addresses follow each other; otherwise
// the range is unsupported as one mapped region.
func devicePointer(ha cudart.HostAllocator, device int, chunks [][]byte) (cudart.DevicePtr, error) {
	var first cudart.DevicePtr
	var off uint64
	for i, c := range chunks {
		p, err := ha.HostGetDevicePointer(device, c)
		if err != nil {
			return 0, fmt.Errorf("pinned: cudaHostGetDevicePointer of chunk %d of %d: %w", i+1, len(chunks), err)
		}
		if i == 0 {
			first = p
		} else if want := first.Add(off); p != want {
			return 0, fmt.Errorf("%w: chunk %d of %d is mapped at %s, not at %s where the one before ends; a mapped region needs one address",
				ErrUnsupported, i+1, len(chunks), p, want)
		}
		off += uint64(len(c))
	}
	return first, nil
}

// mapCode makes CUDA's registration errors match this package's sentinels
// too: 712 is ErrAlreadyRegistered and 713 is ErrNotRegistered.
func mapCode(err error) error {
	switch {
	case errors.Is(err, cudart.ErrHostMemoryAlreadyRegistered):
		return fmt.Errorf("%w: %w", ErrAlreadyRegistered, err)
	case errors.Is(err, cudart.ErrHostMemoryNotRegistered):
		return fmt.Errorf("%w: %w", ErrNotRegistered, err)
	}
	return err
}
