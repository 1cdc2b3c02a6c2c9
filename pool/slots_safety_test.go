package pool_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// lateWriter is one slot whose previous request queued a long chain that
// ends by writing into the slot's staging buffer: copies between two device
// buffers, then the copy out into "io".
type lateWriter struct {
	rt         cudart.Full
	s          *pool.Slots
	poison     pool.Ref // shared host bytes the late write carries
	io, x, x2  pool.Ref
	size       uint64
	copies     int
	poisonByte byte
}

func newLateWriter(t *testing.T, rt cudart.Full) *lateWriter {
	t.Helper()
	// On a GPU the chain must outlast the host's next steps by far; on the
	// fake nothing runs before a synchronisation, so it can be short.
	w := &lateWriter{rt: rt, size: 64 << 20, copies: 64, poisonByte: 0xAA}
	if _, fake := rt.(*cudarttest.Fake); fake {
		w.size, w.copies = 64<<10, 2
	}
	shared, req := pool.NewProfile("shared"), pool.NewProfile("request")
	var err error
	w.poison, err = shared.Host(4096, pool.Name("poison"))
	require.NoError(t, err)
	w.io, err = req.Host(4096, pool.Name("io"))
	require.NoError(t, err)
	w.x, err = req.Device(w.size, pool.Name("x"))
	require.NoError(t, err)
	w.x2, err = req.Device(w.size, pool.Name("x2"))
	require.NoError(t, err)
	w.s, err = pool.NewSlots(rt, 1, pool.SlotLayout{Shared: shared, Profiles: []*pool.Profile{req}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, w.s.Close()) })
	buf, err := w.s.Shared(w.poison)
	require.NoError(t, err)
	p, err := buf.Bytes()
	require.NoError(t, err)
	for i := range p {
		p[i] = w.poisonByte
	}
	return w
}

// queueLateWrite queues, on sl's stream, poison into x, the chain, and x
// into io, and returns without waiting.
func (w *lateWriter) queueLateWrite(t *testing.T, sl pool.Slot) {
	t.Helper()
	st := must(sl.Stream())
	x, x2 := must(sl.Ptr(w.x)), must(sl.Ptr(w.x2))
	poison := must(w.s.Shared(w.poison))
	require.NoError(t, w.rt.MemcpyAsync(0, cudart.DeviceMem(x, 4096), cudart.HostMem(must(poison.Bytes())), cudart.HostToDevice, st))
	for range w.copies {
		require.NoError(t, w.rt.MemcpyAsync(0, cudart.DeviceMem(x2, w.size), cudart.DeviceMem(x, w.size), cudart.DeviceToDevice, st))
		require.NoError(t, w.rt.MemcpyAsync(0, cudart.DeviceMem(x, w.size), cudart.DeviceMem(x2, w.size), cudart.DeviceToDevice, st))
	}
	require.NoError(t, w.rt.MemcpyAsync(0, cudart.HostMem(must(sl.Bytes(w.io))), cudart.DeviceMem(x, 4096), cudart.DeviceToHost, st))
}

// serve is the next request: it stages input in io, copies it through x and
// back, and returns what came back.
func (w *lateWriter) serve(t *testing.T, sl pool.Slot, input byte) []byte {
	t.Helper()
	st := must(sl.Stream())
	io, x := must(sl.Bytes(w.io)), must(sl.Ptr(w.x))
	for i := range io {
		io[i] = input
	}
	require.NoError(t, w.rt.MemcpyAsync(0, cudart.DeviceMem(x, 4096), cudart.HostMem(io), cudart.HostToDevice, st))
	require.NoError(t, w.rt.MemcpyAsync(0, cudart.HostMem(io), cudart.DeviceMem(x, 4096), cudart.DeviceToHost, st))
	require.NoError(t, w.rt.StreamSynchronize(0, st))
	return bytes.Clone(io)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A slot released with its work still queued goes to the next request only
// once that work has run: its late write into the staging buffer cannot
// land on the next request's input.
func TestAReleasedSlotsLateWritesNeverReachTheNextRequest(t *testing.T) {
	rt := cudarttest.Open(t)
	w := newLateWriter(t, rt)
	ctx := context.Background()
	for round := range 3 {
		sl, err := w.s.Acquire(ctx, "request")
		require.NoError(t, err)
		w.queueLateWrite(t, sl)
		require.NoError(t, w.s.Release(sl))

		next, err := w.s.Acquire(ctx, "request")
		require.NoError(t, err)
		got := w.serve(t, next, byte(round+1))
		require.Equal(t, bytes.Repeat([]byte{byte(round + 1)}, 4096), got, "round %d: the released slot's late write corrupted the next request", round)
		require.NoError(t, w.s.Release(next))
	}
}

// The control: the same requests on the same slot without Release's wait
// (on the fake, where the order of events is fixed) see the corruption,
// so the test above can fail.
func TestWithoutTheReleaseWaitTheLateWriteCorrupts(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	w := newLateWriter(t, f)
	sl, err := w.s.Acquire(context.Background(), "request")
	require.NoError(t, err)
	w.queueLateWrite(t, sl)
	got := w.serve(t, sl, 1)
	assert.Equal(t, bytes.Repeat([]byte{w.poisonByte}, 4096), got)
	require.NoError(t, w.s.Release(sl))
}

// One request, as a server makes it: stage, copy in, copy out, wait for the
// output, release.
func request(t testing.TB, rt cudart.Full, s *pool.Slots, l *servingLayout) {
	sl, err := s.Acquire(context.Background(), "b1")
	require.NoError(t, err)
	st := must(sl.Stream())
	in, x := must(sl.Bytes(l.in1)), must(sl.Ptr(l.x1))
	require.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(x, uint64(len(in))), cudart.HostMem(in), cudart.HostToDevice, st))
	require.NoError(t, rt.MemcpyAsync(0, cudart.HostMem(in), cudart.DeviceMem(x, uint64(len(in))), cudart.DeviceToHost, st))
	require.NoError(t, rt.StreamSynchronize(0, st))
	require.NoError(t, s.Release(sl))
}

// The request path makes one stream query, at Release, and no allocation,
// free, event or host synchronisation of the Slots' own: a request that
// waited for its output leaves an idle stream, and its slot goes straight
// to the next Acquire.
func TestTheRequestPathAllocatesNothingAndNeverSynchronises(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s, l := newSlots(t, f, 4)
	const requests = 100
	f.ResetCalls()
	for range requests {
		request(t, f, s, l)
	}
	count := map[string]int{}
	for _, c := range f.Calls() {
		count[c]++
	}
	assert.Equal(t, requests, count["cudaStreamQuery"], "one query a request")
	assert.Equal(t, 2*requests, count["cudaMemcpyAsync"])
	assert.Equal(t, requests, count["cudaStreamSynchronize"], "the request's own wait for its output")
	assert.Zero(t, s.Stats().Profiles[0].Waits, "no Acquire waited")
	delete(count, "cudaStreamQuery")
	delete(count, "cudaMemcpyAsync")
	delete(count, "cudaStreamSynchronize")
	assert.Empty(t, count, "no other call: no malloc, free, event or synchronisation")
}

// A request that releases its slot with work still queued (long work, which
// no query finds done) costs one more query, at the next Acquire that finds
// no free slot, and one wait on the host, off the request path, by the
// Slots' goroutine, which Stats counts.
func TestAReleaseWithWorkQueuedIsSettledOffThePath(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithLongWork())
	s, l := newSlots(t, f, 1)
	ctx := context.Background()
	const requests = 20
	f.ResetCalls()
	for range requests {
		sl, err := s.Acquire(ctx, "b1")
		require.NoError(t, err)
		in, x := must(sl.Bytes(l.in1)), must(sl.Ptr(l.x1))
		require.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(x, uint64(len(in))), cudart.HostMem(in), cudart.HostToDevice, must(sl.Stream())))
		require.NoError(t, s.Release(sl))
	}
	count := map[string]int{}
	for _, c := range f.Calls() {
		count[c]++
	}
	waits := int(s.Stats().Profiles[0].Waits)
	assert.Equal(t, requests-1, waits, "every Acquire but the first waited for the one slot's work")
	assert.Equal(t, requests+waits, count["cudaStreamQuery"], "one query at each Release, one at each Acquire that found the slot busy")
	assert.Equal(t, waits, count["cudaStreamSynchronize"], "one background wait for each waiting Acquire")
}

// Thousands of Acquires cancelled at random points, some while waiting,
// some just as a slot is handed to them, some holding a slot with work
// queued: afterwards every slot can be acquired.
func TestCancelledAcquiresLoseNoSlot(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	const n = 4
	s, _ := newSlots(t, f, n)
	const goroutines, each = 32, 100
	var wg sync.WaitGroup
	var got, cancelled atomic.Int64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range each {
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(2) == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
				} else {
					time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel)
				}
				sl, err := s.Acquire(ctx, []string{"b1", "b8"}[r.IntN(2)])
				cancel()
				if err != nil {
					if !assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded), "%v", err) {
						return
					}
					cancelled.Add(1)
					continue
				}
				got.Add(1)
				if r.IntN(2) == 0 {
					st := must(sl.Stream())
					in := must(sl.Lookup("in"))
					b := must(sl.Bytes(in))
					x := must(sl.Ptr(must(sl.Lookup("x"))))
					assert.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(x, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice, st))
				}
				assert.NoError(t, s.Release(sl))
			}
		}()
	}
	wg.Wait()
	t.Logf("%d acquired, %d cancelled", got.Load(), cancelled.Load())
	require.Positive(t, cancelled.Load(), "the test cancelled nothing")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var all []pool.Slot
	for range n {
		sl, err := s.Acquire(ctx, "b1")
		require.NoError(t, err, "a slot was lost")
		all = append(all, sl)
	}
	st := s.Stats()
	assert.Equal(t, n, st.InUse)
	assert.Zero(t, st.Waiting)
	for _, sl := range all {
		require.NoError(t, s.Release(sl))
	}
}

// queryPanics panics in its next StreamQuery once armed, as a broken
// runtime might.
type queryPanics struct {
	*cudarttest.Fake
	armed atomic.Bool
}

func (p *queryPanics) StreamQuery(dev int, s cudart.Stream) (bool, error) {
	if p.armed.CompareAndSwap(true, false) {
		panic("injected panic in StreamQuery")
	}
	return p.Fake.StreamQuery(dev, s)
}

func TestAPanicLosesNoSlotAndHoldsNoLock(t *testing.T) {
	rt := &queryPanics{Fake: cudarttest.NewFakeT(t)}
	const n = 2
	s, l := newSlots(t, rt, n)
	ctx := context.Background()
	panics := func(f func()) (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}
	// A caller that panics while it holds a slot and defers Release.
	assert.NotNil(t, panics(func() {
		sl, err := s.Acquire(ctx, "b1")
		require.NoError(t, err)
		defer func() { assert.NoError(t, s.Release(sl)) }()
		panic("the handler failed")
	}))
	// The runtime panicking in Release's query, then in Acquire's, with
	// work queued on every slot so that Acquire has to ask.
	for _, in := range []string{"Release", "Acquire"} {
		held := make([]pool.Slot, n)
		for i := range held {
			held[i] = must(s.Acquire(ctx, "b1"))
			b, x := must(held[i].Bytes(l.in1)), must(held[i].Ptr(l.x1))
			require.NoError(t, rt.MemcpyAsync(0, cudart.DeviceMem(x, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice, must(held[i].Stream())))
		}
		if in == "Release" {
			rt.armed.Store(true)
		}
		for _, sl := range held {
			p := panics(func() { assert.NoError(t, s.Release(sl)) })
			assert.Equal(t, in == "Release" && sl == held[0], p != nil, "%s: panicked: %v", in, p)
		}
		if in == "Acquire" {
			rt.armed.Store(true)
			assert.NotNil(t, panics(func() { _, _ = s.Acquire(ctx, "b1") }))
		}
		assert.False(t, rt.armed.Load(), "%s never panicked", in)
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		for i := range held {
			held[i] = must(s.Acquire(tctx, "b1"))
		}
		cancel()
		for _, sl := range held {
			require.NoError(t, s.Release(sl))
		}
	}
}
