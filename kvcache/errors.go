package kvcache

import (
	"errors"
	"fmt"
)

// ErrInvalidLayout means a Layout has a count that is not positive, a type
// that is not FP16, BF16 or FP32, or a page whose size overflows 64 bits.
var ErrInvalidLayout = errors.New("kvcache: invalid layout")

// ErrInvalidOption means an option given to New was refused (nil, out of
// range, in conflict with another, or a stream CUDA does not know), or an
// argument of a call was: a negative count, a batch larger than its page
// tables.
var ErrInvalidOption = errors.New("kvcache: invalid option")

// ErrNoPages means an Append, admission or swap needs more pages than are
// free (cached pages no sequence holds count as free), or a SwapOut more
// host pages than the swap space has free. It is matched by
// every *NoPagesError.
var ErrNoPages = errors.New("kvcache: not enough free pages")

// ErrFreed means a Seq was used after Free: its handle no longer names a
// sequence.
var ErrFreed = errors.New("kvcache: sequence freed")

// ErrSwapped means a sequence is swapped out (SwapOut), so it cannot be
// appended to, forked, swapped out again or laid out in page tables until
// SwapIn.
var ErrSwapped = errors.New("kvcache: sequence swapped out")

// ErrNotSwapped means SwapIn was asked of a sequence that is not swapped
// out: its pages are on the device already.
var ErrNotSwapped = errors.New("kvcache: sequence not swapped out")

// ErrNoSwap means SwapOut was asked of a Cache made without a swap space:
// a mistake of configuration, not a want of pages (that is ErrNoPages).
// WithSwap gives New one.
var ErrNoSwap = errors.New("kvcache: no swap space")

// ErrReleased means the pool took the Cache's pages back (its ReleaseAll
// or Close, or a reset of the device) after New: every call of the Cache,
// its Seqs and its Tables that can fail refuses, changing nothing, and the
// program makes a new Cache. The error also wraps the pool's
// (pool.ErrReleased, pool.ErrClosed or pool.ErrDeviceReset).
var ErrReleased = errors.New("kvcache: cache released with its pool's buffers")

// ErrInvalidSeq means a Seq was not made by this Cache (the zero Seq, or one
// of another Cache).
var ErrInvalidSeq = errors.New("kvcache: invalid sequence")

// NoPagesError is a refusal for want of pages: what was asked, how many
// pages it needs and how many are free. It matches ErrNoPages.
type NoPagesError struct {
	Op      string // what was refused: "Append", "Admit", "SwapOut", "SwapIn"
	Seq     int    // the sequence's id, or -1 for a new one
	Needed  int    // pages the operation needs
	Free    int    // pages free now, cached ones no sequence holds included
	Reserve int    // pages kept free by the watermark, for Admit; 0 otherwise
	Host    bool   // the pages are host pages of the swap space (SwapOut)
}

// Error says what was asked and what is free.
func (e *NoPagesError) Error() string {
	who := "a new sequence"
	if e.Seq >= 0 {
		who = fmt.Sprintf("sequence %d", e.Seq)
	}
	if e.Host {
		return fmt.Sprintf("kvcache: not enough free pages: %s for %s needs %d host page(s) of the swap space; %d free", e.Op, who, e.Needed, e.Free)
	}
	if e.Reserve > 0 {
		return fmt.Sprintf("kvcache: not enough free pages: %s for %s needs %d page(s); %d free, %d of them kept by the watermark", e.Op, who, e.Needed, e.Free, e.Reserve)
	}
	return fmt.Sprintf("kvcache: not enough free pages: %s for %s needs %d page(s); %d free", e.Op, who, e.Needed, e.Free)
}

// Is makes errors.Is(e, ErrNoPages) true.
func (e *NoPagesError) Is(target error) bool { return target == ErrNoPages }
