package pool

import (
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/checked"
)

// Attachment gives every slot a resource of its own, opened once by NewSlots
// and lent to each request with the slot: a library's handle bound to the
// slot's stream (cublas.Library.ForSlots), a communicator. A binding
// implements it without importing pool: its methods use cudart's types and
// the standard library's only.
type Attachment interface {
	// Scratch is the device memory each slot's resource works in, in
	// bytes: NewSlots places it in the slot's own region, 256-byte
	// aligned, so that concurrent requests never share it (0 for none).
	// An error refuses the layout before anything is taken.
	Scratch() (uint64, error)
	// Attach opens the resource of slot index on device: bound to stream,
	// the slot's, and working in the scratch bytes at scratch (0 when
	// Scratch is 0), which stay the slot's until Close. NewSlots calls it
	// once a slot, holding no lock. The Slots close the resource at Close,
	// after the work queued on the slot's stream, and before they free the
	// scratch; a Close that fails is called again by the next Close of the
	// Slots, and a Close after one that succeeded returns nil. For a
	// request to get it (Attached), the resource implements Lender.
	Attach(device, index int, stream cudart.Stream, scratch cudart.DevicePtr, bytes uint64) (io.Closer, error)
}

// Charged is an Attachment whose resources take device memory of their own,
// outside the pool (a cuBLAS handle's): NewSlots counts it, for every slot,
// when it checks the device's free memory before taking any, and names it
// when that is too little.
type Charged interface {
	Attachment
	// OutsideCharge is the device memory one slot's resource takes outside
	// the pool, in bytes: what its library measured, documented beside it
	// (cublas.HandleCharge).
	OutsideCharge() uint64
}

// Guard is how a lent resource asks whether its lease still holds: LeaseErr
// is nil while lease tok holds, and why it has ended after. A slot is one:
// its lease ends at Release (ErrSlotReleased) or Close (ErrClosed). It is an
// alias of an unnamed interface, so that a binding's own alias of the same
// (cublas.Guard) is the same type.
type Guard = interface {
	LeaseErr(tok uint64) error
}

// Lender is a slot's resource that a request gets, typed, from Attached:
// Lend returns it lent for lease tok of g, which must allocate nothing and
// call nothing, as Attached is on every request's path. The lent value
// refuses to be used once g.LeaseErr(tok) is not nil, and starts from the
// resource's own settings whatever the lease before it changed (tok differs
// from one lease to the next). *cublas.Handle is a Lender[cublas.Lent].
type Lender[T any] interface {
	Lend(g Guard, tok uint64) T
}

// Attached is the slot's resource that lends a T (Lender[T]), lent to the
// request: the request's from Acquire to Release, like the slot's buffers.
// After Release its calls fail with an error wrapping ErrSlotReleased, after
// Close with ErrClosed. With a cuBLAS attachment (cublas.Library.ForSlots):
//
//	h, err := pool.Attached[cublas.Lent](sl)
//
// A slot with no attachment lending a T is an error wrapping
// ErrInvalidRequest. It allocates nothing.
func Attached[T any](sl Slot) (T, error) {
	var zero T
	if err := sl.check(); err != nil {
		return zero, err
	}
	for _, r := range sl.s.attached {
		if l, ok := r.(Lender[T]); ok {
			return l.Lend(sl.s, sl.gen), nil
		}
	}
	return zero, fmt.Errorf("%w: slot %d has no attachment lending a %T: give NewSlots one in SlotLayout.Attach", ErrInvalidRequest, sl.s.index, zero)
}

// LeaseErr is why lease tok of the slot's resources has ended: tok is the
// generation of the Slot they were lent to.
func (d *slot) LeaseErr(tok uint64) error { return Slot{s: d, gen: tok}.check() }

// scratchAt is where an attachment's scratch is in each slot's device
// region.
type scratchAt struct {
	off, bytes uint64
}

// checkAttach refuses a nil attachment and two of one type, whose
// resources Attached could not tell apart.
func checkAttach(layout SlotLayout) error {
	seen := make(map[reflect.Type]int, len(layout.Attach))
	for i, a := range layout.Attach {
		if a == nil {
			return fmt.Errorf("%w: NewSlots: SlotLayout.Attach[%d] is nil", ErrInvalidRequest, i)
		}
		ty := reflect.TypeOf(a)
		if j, dup := seen[ty]; dup {
			return fmt.Errorf("%w: NewSlots: SlotLayout.Attach[%d] and [%d] are both %v: a request could not tell their resources apart", ErrInvalidRequest, j, i, ty)
		}
		seen[ty] = i
	}
	return nil
}

// reserveScratch makes room for each attachment's scratch at the end of
// every slot's device region.
func (s *Slots) reserveScratch(layout SlotLayout) error {
	if err := checkAttach(layout); err != nil {
		return err
	}
	s.attach = layout.Attach
	s.scratch = make([]scratchAt, len(layout.Attach))
	for i, a := range layout.Attach {
		if c, ok := a.(Charged); ok {
			var ok bool
			if s.outside, ok = checked.Add(s.outside, c.OutsideCharge()); !ok {
				return fmt.Errorf("%w: NewSlots: the charges of the attachments outside the pool add up past 2^64 B", ErrInvalidRequest)
			}
		}
		n, err := a.Scratch()
		if err != nil {
			return fmt.Errorf("%w: NewSlots: SlotLayout.Attach[%d] (%T): %w", ErrInvalidRequest, i, a, err)
		}
		if n == 0 {
			continue
		}
		off, err := align.Up(s.stride[Device], align.CUDA)
		end := off + n
		// The stride is placed as every buffer is, at 256-byte multiples:
		// scratch of any size then leaves room for the next slot.
		stride, errEnd := align.Up(end, align.CUDA)
		if err != nil || errEnd != nil || end < off {
			return fmt.Errorf("%w: NewSlots: a slot's buffers and the %d B scratch of SlotLayout.Attach[%d] overflow 2^64 B", ErrInvalidRequest, n, i)
		}
		s.scratch[i] = scratchAt{off: off, bytes: n}
		s.stride[Device] = stride
	}
	return nil
}

// attachAll opens every attachment's resource on every slot, keeping each
// as soon as it is open, so that takeBack closes it if a later one fails.
func (s *Slots) attachAll() error {
	for i := range s.slots {
		sl := &s.slots[i]
		sl.attached = make([]io.Closer, 0, len(s.attach))
		for j, a := range s.attach {
			var p cudart.DevicePtr
			if at := s.scratch[j]; at.bytes != 0 {
				p = sl.dev.Add(at.off)
			}
			r, err := a.Attach(s.dev, i, sl.stream, p, s.scratch[j].bytes)
			if err != nil {
				return fmt.Errorf("pool: SlotLayout.Attach[%d] (%T) of slot %d: %w", j, a, i, err)
			}
			if r == nil {
				return fmt.Errorf("%w: SlotLayout.Attach[%d] (%T) of slot %d returned no resource and no error", ErrInvalidRequest, j, a, i)
			}
			sl.attached = append(sl.attached, r)
		}
	}
	return nil
}

// closeAttached closes every slot's resources, in the reverse order of
// attachAll. Each is closed again by the next call, which a resource
// closed already answers with nil. After a reset of the device, which took
// the resources with it, their errors are the reset's, which Close reports
// once on its own.
func (s *Slots) closeAttached() error {
	var errs []error
	for i := len(s.slots) - 1; i >= 0; i-- {
		sl := &s.slots[i]
		for j := len(sl.attached) - 1; j >= 0; j-- {
			if err := sl.attached[j].Close(); err != nil {
				errs = append(errs, fmt.Errorf("pool: close SlotLayout.Attach[%d] (%T) of slot %d: %w", j, s.attach[j], i, err))
			}
		}
	}
	if s.p.reset.Reset() {
		return nil
	}
	return errors.Join(errs...)
}
