package pool

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/checked"
)

// SlotLayout is what NewSlots places: the buffers shared by every request, once,
// and the per-request buffers of each shape profile, once in every slot.
type SlotLayout struct {
	// Shared holds the buffers every request reads (weights, constants),
	// placed once for the life of the Slots. It may be nil. Its buffers
	// cannot have Live ranges: requests at different steps use them at
	// once.
	Shared *Profile
	// Profiles are the request's buffers at each shape, at least one. A
	// slot is sized for the largest; each is planned inside it once.
	Profiles []*Profile
	// Attach gives every slot a resource of each attachment's, opened on
	// the slot's stream and working in scratch memory of the slot's own
	// region, and lent to each request (Attached): a cuBLAS handle
	// (cublas.Library.ForSlots), a communicator. At most one of each type.
	// Size the device around the resources' own memory, which no pool
	// sees: a cuBLAS handle's is in package cublas.
	Attach []Attachment
}

// Slots serves concurrent requests from one pre-planned pool: N slots, each
// the per-request buffers of the largest profile and a stream of its own,
// and the shared buffers once. Acquire hands a free slot out, in FIFO order
// when none is free; Release gives it back once the work queued on its
// stream has finished. Every buffer's address is fixed for the life of the
// Slots, so a CUDA graph captured on a slot replays on that slot until
// Close. It is safe for concurrent use. Create it with NewSlots.
type Slots struct {
	p        *Pool
	sm       cudart.Streams
	dev      int
	slots    []slot
	attach   []Attachment // SlotLayout.Attach
	scratch  []scratchAt  // where each attachment's scratch is in a slot
	outside  uint64       // device memory a slot's attachments take outside the pool (Charged)
	profiles []*planned
	byName   map[string]*planned

	shared      *Profile
	sharedBufs  []*Buffer    // in declaration order
	sharedAt    []sharedAddr // their addresses, read once
	sharedNames map[string]int32
	stride      [numArenas]uint64 // bytes of one slot's region in each arena
	sharedBytes [numArenas]uint64 // bytes of the shared buffers in each arena

	// closedFlag mirrors closed for the Slot methods and for Release and a
	// woken Acquire, which read it before any lock.
	closedFlag atomic.Bool
	// born is the monotonic origin of the wait clock, read once.
	born time.Time

	// mu guards the fields below, each slot's held and counters, and each
	// planned profile's counters. No CUDA call is made under it, so that
	// requests never queue behind one another's calls; every holder
	// unlocks in a defer or on every path at once.
	mu        sync.Mutex
	closed    bool
	resetSaid bool       // Close has returned ErrDeviceReset
	ready     []*slot    // free, their work known finished
	draining  ring       // released, in release order, their work maybe queued still
	asking    int        // released slots in neither queue while CUDA is asked about their stream
	settled   *sync.Cond // on mu: asking fell to 0
	waiters   []*waiter
	spare     []*waiter // finished waiters, reused
	kick      chan struct{}
	stop      chan struct{}
	stopped   chan struct{}
}

// slot is one copy of the per-request buffers and its stream.
type slot struct {
	owner   *Slots
	index   int
	stream  cudart.Stream
	dev     cudart.DevicePtr // byte 0 of the slot's device region; 0 without one
	hostDev cudart.DevicePtr // device address of its host region, when the host arena is mapped
	host    []byte           // its host region
	gen     atomic.Uint64    // a Slot of another generation was released
	// attached are the slot's resources, by attachment: set once by
	// NewSlots and never changed after, so that Attached reads them
	// without a lock; Close closes them, which makes them refuse every
	// call.
	attached []io.Closer
	// regions are the slot's region in each arena, as a pool buffer (nil
	// where it has none), and annotated the profile a memory tool was told
	// they hold: the holder's business, as the slot's buffers are.
	regions   [numArenas]*Buffer
	annotated *planned

	held  *planned // the profile it is held with; nil when free
	freed bool     // Close destroyed its stream

	acquisitions uint64
	waits        uint64
	waited       atomic.Int64 // nanoseconds; added by the waiter once awake, without s.mu
	handedTo     *waiter      // the waiter it was handed to, recycled at its Release
	// releasing is set from a Release's check that the Slots are open
	// until, under Slots.mu, it is done: Close waits for it.
	releasing atomic.Bool
}

// sharedAddr is where a shared buffer is: fixed, read once at NewSlots.
type sharedAddr struct {
	arena Arena
	ptr   cudart.DevicePtr // 0 where the arena has no device address
	bytes []byte           // nil for a device buffer
}

// NewSlots plans every profile of layout once, sizes a pool for the shared
// buffers plus n slots of the largest profile, and places them: memory is
// shared + n × largest, in each arena (Stats reports it). Each slot gets a
// stream of its own. opts are New's; NewSlots sets the arenas' sizes itself
// (WithDeviceBytes and WithHostBytes are replaced) and adds the slots'
// streams to those of WithStreams, so that Close waits for them. The runtime
// must implement cudart.Streams.
//
// n below 1 or above MaxSlots, a layout with no profile, a profile with no
// buffer, two profiles of one name, one Profile both Shared and in
// Profiles, a name both shared and in a profile, a shared buffer with
// Live, a nil attachment, two of one type, or one whose Scratch fails:
// ErrInvalidOption or ErrInvalidRequest, nothing taken. So is a layout
// whose device memory, with what its attachments take outside the pool for
// every slot (Charged: a cuBLAS handle's 64 MiB), is more than the device
// has free (cudaMemGetInfo), refused before any slot's stream is made:
// setup costs one CUDA call then, whatever n. An attachment that fails to Attach fails NewSlots, which
// closes the resources already attached.
//
// WithGuards is refused (ErrInvalidOption): a slot's profiles share its
// bytes, so a guard after one profile's buffer is another's data. Memory
// tools see each held slot's buffers instead: run the program's tests on
// cudarttest's strict fake, or under compute-sanitizer, and an access past
// one of a slot's buffers fails, naming the buffer (see Acquire).
func NewSlots(rt cudart.Runtime, n int, layout SlotLayout, opts ...Option) (*Slots, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: NewSlots: nil runtime", ErrInvalidOption)
	}
	if n < 1 || n > MaxSlots {
		return nil, fmt.Errorf("%w: NewSlots with %d slots: want 1 to %d", ErrInvalidOption, n, MaxSlots)
	}
	sm, isStreams := rt.(cudart.Streams)
	if !isStreams {
		return nil, fmt.Errorf("%w: NewSlots needs a runtime with streams (cudart.Streams); %T lacks them", ErrInvalidOption, rt)
	}
	profiles, err := planLayout(layout)
	if err != nil {
		return nil, err
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if cfg.guard > 0 {
		// A slot's profiles share its bytes: a guard after one profile's
		// buffer is another's data. Keeping guards would take a memset at
		// every Acquire that changes the profile and a wait for the slot's
		// stream and a read-back at every Release, on the request path,
		// which never waits.
		return nil, fmt.Errorf("%w: NewSlots: WithGuards is for a pool's buffers: a slot's profiles share its bytes, so a guard after one profile's buffer would be another's data; run under a memory tool (cudarttest.WithMemcheck, compute-sanitizer), which sees each held slot's buffers as regions and names the one an access runs past", ErrInvalidOption)
	}
	s := &Slots{sm: sm, dev: cfg.device, profiles: profiles, byName: make(map[string]*planned, len(profiles)), shared: layout.Shared}
	for _, pr := range profiles {
		s.byName[pr.name] = pr
		for k := range numArenas {
			s.stride[k] = max(s.stride[k], pr.end[k])
		}
	}
	if err := s.reserveScratch(layout); err != nil {
		return nil, err
	}
	var total [numArenas]uint64
	for k := range numArenas {
		if total[k], err = s.arenaBytes(k, n); err != nil {
			return nil, err
		}
	}
	if err := checkDevices(rt, &cfg); err != nil {
		return nil, err
	}
	if err := s.fits(rt, n, total[Device]); err != nil {
		return nil, err
	}
	// The pool first: memory that cannot be had fails its one allocation
	// before a stream is made for every slot.
	if s.p, err = New(rt, append(slices.Clone(opts), WithDeviceBytes(total[Device]), WithHostBytes(total[Host]))...); err != nil {
		return nil, err
	}
	s.slots = make([]slot, n)
	done := false
	defer func() {
		// A panic in the runtime half way takes back what was taken.
		if !done {
			_ = s.takeBack()
		}
	}()
	if err := s.setUp(); err != nil {
		done = true
		return nil, errors.Join(err, s.takeBack())
	}
	if err := s.attachAll(); err != nil {
		done = true
		return nil, errors.Join(err, s.takeBack())
	}
	s.ready = make([]*slot, 0, n)
	for i := n - 1; i >= 0; i-- {
		s.ready = append(s.ready, &s.slots[i])
	}
	s.draining = ring{buf: make([]*slot, n)}
	s.settled = sync.NewCond(&s.mu)
	s.born = time.Now()
	s.kick, s.stop, s.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go s.drain()
	done = true
	return s, nil
}

// MaxSlots is the most slots NewSlots accepts, 2^31-1: each slot takes at
// least 256 B of an arena, so more would need 512 GiB for the slots alone.
// A larger n is refused before anything is allocated, in Go or in CUDA.
const MaxSlots = 1<<31 - 1

// fits refuses n slots whose device memory, devBytes in all and what their
// attachments take outside the pool (Charged), is more than the device has
// free.
func (s *Slots) fits(rt cudart.Runtime, n int, devBytes uint64) error {
	outside, okOutside := checked.Mul(uint64(n), s.outside)
	need, okNeed := checked.Add(devBytes, outside)
	if !okOutside || !okNeed {
		return fmt.Errorf("%w: NewSlots: %d slots of %s, %s shared and %s a slot outside the pool need more than 2^64 B of device memory", ErrInvalidOption, n, bytesize.Format(s.stride[Device]), bytesize.Format(s.sharedBytes[Device]), bytesize.Format(s.outside))
	}
	if need == 0 {
		return nil
	}
	free, _, err := rt.MemGetInfo(s.dev)
	if err != nil {
		return fmt.Errorf("pool: NewSlots: ask device %d's free memory: %w", s.dev, err)
	}
	if need > free {
		var also string
		if outside > 0 {
			also = fmt.Sprintf(", and their attachments' resources %s (%d B) more outside the pool (%s a slot: %s)", bytesize.Format(outside), outside, bytesize.Format(s.outside), s.charged())
		}
		return fmt.Errorf("%w: NewSlots: %d slots of %s and %s shared need %s (%d B) of device memory%s; device %d has %s (%d B) free",
			ErrInvalidOption, n, bytesize.Format(s.stride[Device]), bytesize.Format(s.sharedBytes[Device]), bytesize.Format(devBytes), devBytes, also, s.dev, bytesize.Format(free), free)
	}
	return nil
}

// charged names the attachments that take memory outside the pool, and how
// much a slot.
func (s *Slots) charged() string {
	var out []string
	for i, a := range s.attach {
		if c, ok := a.(Charged); ok && c.OutsideCharge() > 0 {
			out = append(out, fmt.Sprintf("SlotLayout.Attach[%d] (%T) %s", i, a, bytesize.Format(c.OutsideCharge())))
		}
	}
	return strings.Join(out, ", ")
}

// setUp makes each slot's stream, has the pool wait for them, and places
// the buffers. On failure the caller closes the pool, then destroys the
// streams made.
func (s *Slots) setUp() error {
	streams := make([]cudart.Stream, len(s.slots))
	for i := range s.slots {
		// freed until its stream is made: none to destroy
		s.slots[i] = slot{owner: s, index: i, freed: true}
	}
	for i := range s.slots {
		sl := &s.slots[i]
		var err error
		if sl.stream, err = s.sm.StreamCreate(s.dev); err != nil {
			return fmt.Errorf("pool: create the stream of slot %d: %w", i, err)
		}
		sl.freed = false
		streams[i] = sl.stream
	}
	if err := s.p.adoptStreams(streams); err != nil {
		return err
	}
	return s.place()
}

// place queues the shared buffers and the slot regions in the pool, commits,
// and reads their addresses once: they never change.
func (s *Slots) place() error {
	s.sharedNames = map[string]int32{}
	if s.shared != nil {
		for i, b := range s.shared.bufs {
			if b.r.name != "" {
				s.sharedNames[b.r.name] = int32(i)
			}
			buf, err := s.p.want(b.arena, b.r.size, []WantOption{Name(b.r.name)})
			if err != nil {
				return err
			}
			s.sharedBufs = append(s.sharedBufs, buf)
		}
	}
	var regions [numArenas][]*Buffer
	for k := range numArenas {
		if s.stride[k] == 0 {
			continue
		}
		for i := range s.slots {
			buf, err := s.p.want(k, s.stride[k], []WantOption{Name(fmt.Sprintf("slot %d", i)), SubAllocated()})
			if err != nil {
				return err
			}
			regions[k] = append(regions[k], buf)
		}
	}
	if err := s.p.Commit(); err != nil {
		return err
	}
	for _, b := range s.sharedBufs {
		at := sharedAddr{arena: b.arena}
		at.ptr, _ = b.Ptr() // 0 where the arena has no device address
		if b.arena == Host {
			var err error
			if at.bytes, err = b.Bytes(); err != nil {
				return err
			}
		}
		s.sharedAt = append(s.sharedAt, at)
	}
	for i := range s.slots {
		sl := &s.slots[i]
		for k := range numArenas {
			if r := regions[k]; r != nil {
				sl.regions[k] = r[i]
			}
		}
		if r := regions[Device]; r != nil {
			var err error
			if sl.dev, err = r[i].Ptr(); err != nil {
				return err
			}
		}
		if r := regions[Host]; r != nil {
			var err error
			if sl.host, err = r[i].Bytes(); err != nil {
				return err
			}
			sl.hostDev, _ = r[i].Ptr() // 0 unless the host arena is mapped
		}
	}
	return s.annotateScratch()
}

// Len is the number of slots.
func (s *Slots) Len() int {
	if s == nil {
		return 0
	}
	return len(s.slots)
}

// Shared returns the pool buffer of a shared buffer: its Ptr or Bytes load
// the weights before serving. r comes from SlotLayout.Shared's Device, Host or
// Lookup.
func (s *Slots) Shared(r Ref) (*Buffer, error) {
	if err := s.valid(); err != nil {
		return nil, err
	}
	if r.p == nil || r.p != s.shared || int(r.i) >= len(s.sharedAt) {
		return nil, fmt.Errorf("%w: %s is not one of the shared buffers", ErrNotInProfile, r.label())
	}
	return s.sharedBufs[r.i], nil
}

// valid refuses a nil or zero Slots, which NewSlots did not make.
func (s *Slots) valid() error {
	if s == nil || s.p == nil {
		return fmt.Errorf("%w: the slots were not created by NewSlots", ErrClosed)
	}
	return nil
}

// label is how errors name the buffer r refers to.
func (r Ref) label() string {
	if r.p == nil {
		return "the zero Ref"
	}
	b := r.p.bufs[r.i]
	return fmt.Sprintf("%s %s of profile %q", b.arena, b.r.label(), r.p.name)
}

// wrapf is err wrapped after what, or nil.
func wrapf(err error, what string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(what+": %w", append(args, err)...)
}
