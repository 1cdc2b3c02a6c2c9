package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// ErrClosed is returned by every call on a pool after Close, by Ptr and
// Bytes on a handle whose pool is closed, and by every call on a Pool that
// New did not make.
var ErrClosed = errors.New("pool: closed")

// ErrCommitted is returned by WantDevice and WantHost after Commit: the layout
// is locked until ReleaseAll.
var ErrCommitted = errors.New("pool: committed; call ReleaseAll before requesting more")

// ErrNotPlaced is returned by Ptr and Bytes on a handle that Satisfy has not
// placed yet.
var ErrNotPlaced = errors.New("pool: buffer not placed yet; call Satisfy or Commit first")

// ErrReleased is returned by Ptr and Bytes on a handle from before the last
// ReleaseAll: its bytes may now belong to another buffer.
var ErrReleased = errors.New("pool: buffer released by ReleaseAll")

// ErrExhausted is matched (errors.Is) by every *ExhaustedError.
var ErrExhausted = errors.New("pool: arena exhausted")

// ErrNoArena is returned when a request names an arena the pool did not take
// (its size option was 0).
var ErrNoArena = errors.New("pool: arena not reserved")

// ErrInvalidRequest is returned for a request that can never be placed: a zero
// size, a size that overflows once aligned, an invalid lifetime or a nil
// option; by Satisfy and Commit for buffers whose sizes add up past 2^64 B;
// and by the methods of a nil *Buffer.
var ErrInvalidRequest = errors.New("pool: invalid request")

// ErrInvalidOption is returned by New for a nil option, an option out of
// range, or one the runtime cannot honour.
var ErrInvalidOption = errors.New("pool: invalid option")

// ErrDeviceReset is returned by every call that would touch the arenas once
// the pool's device was reset (cudaDeviceReset through cudart), and once by
// Close, which forgets what the reset freed and frees what it left. After a
// plain reset a new pool in the same process works. After a fault CUDA
// documents as fatal (an illegal address, a launch failure, ...) the reset
// succeeds but the device is lost for the rest of the process, as measured
// on an H100 with CUDA 13.0: a new pool fails with an error matching
// cudart.ErrDevicesUnavailable, and only a new process recovers. See the
// package's Caveats.
var ErrDeviceReset = errors.New("pool: device reset")

// ErrInvalidStream is returned when a stream given to WithStreams or
// UseStreams is one CUDA does not know, when ReleaseAll or Close cannot wait
// for a stream destroyed since (the error names it: drop it with
// ForgetStreams), and by ForgetStreams for a stream the pool does not wait
// for.
var ErrInvalidStream = errors.New("pool: invalid stream")

// ErrWrongArena is returned by Ptr on a host buffer that has no device
// address, and by Bytes on a device buffer.
var ErrWrongArena = errors.New("pool: wrong arena for this call")

// ExhaustedError reports that requests do not fit in an arena. From
// Satisfy or Commit, the queued requests do not fit together: nothing was
// placed and the queue was kept, so the caller can ReleaseAll, drop
// requests by closing the pool, or retry with a bigger pool. From WantDevice
// or WantHost, the one request is larger than the whole arena: it was not
// queued, and the queue is as it was.
type ExhaustedError struct {
	Arena        Arena  // the arena that does not fit
	Need         uint64 // bytes the arena would need for the placed and queued requests, or for the refused one
	Have         uint64 // the arena's capacity
	LargestName  string // the largest queued request for that arena, or the refused one
	LargestBytes uint64
	refused      bool // WantDevice or WantHost refused the request: nothing was queued
}

// Error says what was asked and what was available, in binary units.
func (e *ExhaustedError) Error() string {
	need, have := bytesize.Format(e.Need), bytesize.Format(e.Have)
	if need == have {
		// Rounding hid the difference: say it in bytes.
		need, have = fmt.Sprintf("%s (%d B)", need, e.Need), fmt.Sprintf("%s (%d B)", have, e.Have)
	}
	if e.refused {
		return fmt.Sprintf("%v (%s): need %s, have %s; %q alone is larger than the arena, not queued",
			ErrExhausted, e.Arena, need, have, e.LargestName)
	}
	return fmt.Sprintf("%v (%s): need %s, have %s; largest pending: %q %s",
		ErrExhausted, e.Arena, need, have, e.LargestName, bytesize.Format(e.LargestBytes))
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// requestName is how errors name a request: its Name, or its size.
func requestName(name string, size uint64) string {
	if name == "" {
		return fmt.Sprintf("unnamed request of %d B", size)
	}
	return name
}
