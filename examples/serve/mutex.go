package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// mutexBackend is today's way: one pool, one set of buffers and one stream,
// one request at a time behind a mutex, with graphs one per profile.
type mutexBackend struct {
	m      *model
	p      *pool.Pool
	st     cudart.Stream
	bufs   buffers
	graphs capture.ByRows // nil launching kernel by kernel
	mu     sync.Mutex
}

func newMutexBackend(m *model, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	if b.st, err = m.rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	size := m.rowBytes() * uint64(slices.Max(batches))
	const slack = 4 << 10 // rounding of each buffer to 256 B
	if b.p, err = pool.New(m.rt, pool.WithDeviceBytes(2*size+m.weightBytes()+slack), pool.WithHostBytes(2*size+m.weightBytes()+slack),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(b.st)); err != nil {
		return nil, errors.Join(err, m.rt.StreamDestroy(dev, b.st))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	var in, out, staging, x, y, w *pool.Buffer
	for _, r := range []struct {
		buf  **pool.Buffer
		want func(uint64, ...pool.WantOption) (*pool.Buffer, error)
		size uint64
		name string
	}{
		{&in, b.p.WantHost, size, "in"}, {&out, b.p.WantHost, size, "out"}, {&staging, b.p.WantHost, m.weightBytes(), "weights.staging"},
		{&x, b.p.WantDevice, size, "x"}, {&y, b.p.WantDevice, size, "y"}, {&w, b.p.WantDevice, m.weightBytes(), "weights"},
	} {
		if *r.buf, err = r.want(r.size, pool.Name(r.name)); err != nil {
			return nil, err
		}
	}
	if err := b.p.Commit(); err != nil {
		return nil, err
	}
	var sbytes []byte
	for _, e := range []error{
		ptrTo(&b.bufs.x, x), ptrTo(&b.bufs.y, y), ptrTo(&b.bufs.w, w),
		bytesOf(&b.bufs.in, in), bytesOf(&b.bufs.out, out), bytesOf(&sbytes, staging),
	} {
		if e != nil {
			return nil, e
		}
	}
	if err := m.loadWeights(b.bufs.w, sbytes); err != nil {
		return nil, err
	}
	if graphs {
		b.graphs, err = m.captureEach(b.st, b.bufs, batches)
	}
	return b, err
}

func (b *mutexBackend) serve(_ context.Context, _, rows int, x exchange) (time.Duration, error) {
	g, err := b.graphs.For(rows)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	b.mu.Lock()
	waited := time.Since(start)
	defer b.mu.Unlock()
	return waited, b.m.run(b.st, b.bufs, rows, g, x)
}

func (b *mutexBackend) memory() string {
	st := b.p.Stats()
	return fmt.Sprintf("device %s, host %s", humanize.IBytes(st.Device.Used), humanize.IBytes(st.Host.Used))
}

func (b *mutexBackend) close() error {
	errs := []error{b.graphs.Destroy(b.m.rt, dev)}
	b.graphs = nil
	if b.p != nil {
		errs = append(errs, b.p.Close())
		b.p = nil
	}
	errs = append(errs, b.m.rt.StreamDestroy(dev, b.st))
	return errors.Join(errs...)
}

// ptrTo stores b's device address in p.
func ptrTo(p *cudart.DevicePtr, b *pool.Buffer) (err error) {
	*p, err = b.Ptr()
	return err
}

// bytesOf stores b's host view in v.
func bytesOf(v *[]byte, b *pool.Buffer) (err error) {
	*v, err = b.Bytes()
	return err
}
