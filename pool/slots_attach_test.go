package pool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// counter is an Attachment for the tests: each slot's resource is an event
// of the runtime's, so that one not destroyed shows as a leak, and it
// records what each slot was given.
type counter struct {
	rt      cudart.Full
	scratch uint64
	fail    int // Attach of this slot index fails; -1 for none
	panics  int // Attach of this slot index panics; -1 for none

	mu        sync.Mutex // guards the fields below
	resources []*resource
}

func newCounter(rt cudart.Full, scratch uint64) *counter {
	return &counter{rt: rt, scratch: scratch, fail: -1, panics: -1}
}

var errAttach = errors.New("attach failed")

func (c *counter) Scratch() (uint64, error) { return c.scratch, nil }

func (c *counter) Attach(device, index int, s cudart.Stream, scratch cudart.DevicePtr, n uint64) (io.Closer, error) {
	switch index {
	case c.fail:
		return nil, fmt.Errorf("%w: slot %d", errAttach, index)
	case c.panics:
		panic("attach")
	}
	ev, err := c.rt.EventCreate(device)
	if err != nil {
		return nil, err
	}
	r := &resource{c: c, device: device, index: index, stream: s, scratch: scratch, bytes: n, ev: ev}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resources = append(c.resources, r)
	return r, nil
}

// resource is a counter's resource of one slot.
type resource struct {
	c       *counter
	device  int
	index   int
	stream  cudart.Stream
	scratch cudart.DevicePtr
	bytes   uint64
	ev      cudart.Event
	closed  bool
}

func (r *resource) Close() error {
	if r.closed {
		return nil
	}
	if err := r.c.rt.EventDestroy(r.device, r.ev); err != nil {
		return err
	}
	r.closed = true
	return nil
}

func (r *resource) Lend(g pool.Guard, tok uint64) lentResource {
	return lentResource{r: r, g: g, tok: tok}
}

// lentResource is a resource lent to one request.
type lentResource struct {
	r   *resource
	g   pool.Guard
	tok uint64
}

// Index is the slot the resource is of, or why the lease cannot use it.
func (l lentResource) Index() (int, error) {
	if err := l.g.LeaseErr(l.tok); err != nil {
		return -1, err
	}
	return l.r.index, nil
}

// other is a second kind of attachment, with no scratch, whose resource
// lends nothing.
type other struct{ attached int }

func (o *other) Scratch() (uint64, error) { return 0, nil }
func (o *other) Attach(_, _ int, _ cudart.Stream, scratch cudart.DevicePtr, n uint64) (io.Closer, error) {
	if scratch != 0 || n != 0 {
		return nil, fmt.Errorf("scratch 0x%x of %d B, asked for none", uintptr(scratch), n)
	}
	o.attached++
	return io.NopCloser(nil), nil
}

// Each slot's resource is opened on its stream, with scratch of its own in
// the slot's region, and lent to the request that holds the slot, typed.
func TestEachSlotGetsItsOwnResource(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	l := newServingLayout(t)
	bare, err := pool.NewSlots(f, 1, l.layout())
	require.NoError(t, err)
	slotBytes := bare.Stats().SlotDevice
	require.NoError(t, bare.Close())

	c, o := newCounter(f, 5000), &other{}
	layout := l.layout()
	layout.Attach = []pool.Attachment{o, c}
	s, err := pool.NewSlots(f, 3, layout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	assert.Equal(t, 3, o.attached)
	require.Len(t, c.resources, 3)
	st := s.Stats()
	assert.Equal(t, slotBytes+5120, st.SlotDevice, "the scratch at the end of each slot, 5000 B rounded to 256")

	ctx := context.Background()
	var held []pool.Slot
	for range 3 {
		sl, err := s.Acquire(ctx, "b8")
		require.NoError(t, err)
		held = append(held, sl)
		lent, err := pool.Attached[lentResource](sl)
		require.NoError(t, err)
		i, err := lent.Index()
		require.NoError(t, err)
		require.Equal(t, sl.Index(), i, "the slot's own resource")
		r := c.resources[i]
		assert.Equal(t, must(sl.Stream()), r.stream)
		assert.Equal(t, uint64(5000), r.bytes)
		assert.Zero(t, uintptr(r.scratch)%256, "256-byte aligned")
		y := must(sl.Ptr(must(sl.Lookup("y"))))
		assert.GreaterOrEqual(t, r.scratch, y.Add(8*4096), "after the slot's buffers")
		assert.LessOrEqual(t, uint64(r.scratch-y)+5000, st.SlotDevice, "inside the slot's region")
	}
	for _, a := range held {
		for _, b := range held {
			if a != b {
				ra := c.resources[a.Index()].scratch
				rb := c.resources[b.Index()].scratch
				assert.True(t, ra+5000 <= rb || rb+5000 <= ra, "the scratch of slots %d and %d overlap", a.Index(), b.Index())
			}
		}
	}
	_, err = pool.Attached[int](held[0])
	require.ErrorIs(t, err, pool.ErrInvalidRequest, "no attachment lends an int")
	_, err = pool.Attached[lentResource](pool.Slot{})
	require.ErrorIs(t, err, pool.ErrForeignSlot)

	lent, err := pool.Attached[lentResource](held[0])
	require.NoError(t, err)
	require.NoError(t, s.Release(held[0]))
	_, err = lent.Index()
	require.ErrorIs(t, err, pool.ErrSlotReleased, "the lease ended at Release")
	_, err = pool.Attached[lentResource](held[0])
	require.ErrorIs(t, err, pool.ErrSlotReleased)
	next, err := s.Acquire(ctx, "b1")
	require.NoError(t, err)
	_, err = lent.Index()
	require.ErrorIs(t, err, pool.ErrSlotReleased, "still refused while the next request holds the slot")
	lent, err = pool.Attached[lentResource](next)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = lent.Index()
	require.ErrorIs(t, err, pool.ErrClosed)
	for _, r := range c.resources {
		assert.True(t, r.closed, "Close closes slot %d's resource", r.index)
	}
}

// Taking a slot's resource allocates nothing: it is on every request's path.
func TestAttachedAllocatesNothing(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{&other{}, newCounter(f, 0)}
	s, err := pool.NewSlots(f, 1, layout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	sl, err := s.Acquire(context.Background(), "b1")
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Release(sl)) }()
	allocatesNothing(t, func() error {
		lent, err := pool.Attached[lentResource](sl)
		if err != nil {
			return err
		}
		_, err = lent.Index()
		return err
	})
}

// Layouts NewSlots refuses before anything is taken.
func TestAttachmentRefusals(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	l := newServingLayout(t)
	// Attachments are numbered as SlotLayout.Attach indexes them, from 0,
	// as slots are.
	for name, c := range map[string]struct {
		attach []pool.Attachment
		want   error
		says   string
	}{
		"nil":             {[]pool.Attachment{&other{}, nil}, pool.ErrInvalidRequest, "SlotLayout.Attach[1] is nil"},
		"two of a type":   {[]pool.Attachment{newCounter(f, 0), &other{}, newCounter(f, 256)}, pool.ErrInvalidRequest, "SlotLayout.Attach[0] and [2] are both *pool_test.counter"},
		"refused":         {[]pool.Attachment{refusing{}}, errRefused, "SlotLayout.Attach[0] (pool_test.refusing)"},
		"scratch of 2^64": {[]pool.Attachment{newCounter(f, 1<<64-1)}, pool.ErrInvalidRequest, "scratch of SlotLayout.Attach[0] overflow"},
	} {
		t.Run(name, func(t *testing.T) {
			layout := l.layout()
			layout.Attach = c.attach
			_, err := pool.NewSlots(f, 2, layout)
			require.ErrorIs(t, err, c.want)
			require.ErrorIs(t, err, pool.ErrInvalidRequest)
			assert.ErrorContains(t, err, c.says)
			require.True(t, f.Live().Empty(), "%+v", f.Live())
		})
	}
}

var errRefused = errors.New("refused")

type refusing struct{}

func (refusing) Scratch() (uint64, error) { return 0, errRefused }
func (refusing) Attach(int, int, cudart.Stream, cudart.DevicePtr, uint64) (io.Closer, error) {
	panic("Attach after Scratch refused")
}

// An Attach that fails or panics on the third slot fails NewSlots, which
// closes the resources of the first two and takes back everything else.
func TestAFailedAttachLeavesNothing(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(fmt.Sprintf("panics=%v", panics), func(t *testing.T) {
			f := cudarttest.NewFakeT(t)
			c := newCounter(f, 1024)
			if panics {
				c.panics = 2
			} else {
				c.fail = 2
			}
			layout := newServingLayout(t).layout()
			layout.Attach = []pool.Attachment{c}
			if panics {
				require.PanicsWithValue(t, "attach", func() { _, _ = pool.NewSlots(f, 4, layout) })
			} else {
				_, err := pool.NewSlots(f, 4, layout)
				require.ErrorIs(t, err, errAttach)
			}
			require.Len(t, c.resources, 2)
			for _, r := range c.resources {
				assert.True(t, r.closed, "slot %d's resource", r.index)
			}
			require.NoError(t, f.CheckLeaks())
		})
	}
}

// An attachment that returns neither a resource nor an error is refused.
func TestAnAttachmentMustReturnAResource(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{nothing{}}
	_, err := pool.NewSlots(f, 2, layout)
	require.ErrorIs(t, err, pool.ErrInvalidRequest)
	require.NoError(t, f.CheckLeaks())
}

type nothing struct{}

func (nothing) Scratch() (uint64, error) { return 0, nil }
func (nothing) Attach(int, int, cudart.Stream, cudart.DevicePtr, uint64) (io.Closer, error) {
	return nil, nil
}

// A resource whose Close fails is closed again by the next Close of the
// slots, and the failure reaches the caller.
func TestAFailedResourceCloseIsRetried(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	c := newCounter(f, 0)
	layout := newServingLayout(t).layout()
	layout.Attach = []pool.Attachment{c}
	s, err := pool.NewSlots(f, 2, layout)
	require.NoError(t, err)
	require.NoError(t, f.FailCallNth("cudaEventDestroy", 2, 1))
	err = s.Close()
	var ce *cudart.Error
	require.ErrorAs(t, err, &ce)
	assert.ErrorContains(t, err, "close SlotLayout.Attach[0] (*pool_test.counter) of slot 0")
	f.ClearFaults()
	require.NoError(t, s.Close())
	for _, r := range c.resources {
		assert.True(t, r.closed, "slot %d's resource", r.index)
	}
	require.NoError(t, f.CheckLeaks())
}
