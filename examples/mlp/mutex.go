package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// mutexBackend is one pool, one set of buffers, one stream and one handle
// with its workspace in the pool, one request at a time behind a mutex,
// with graphs one per profile.
type mutexBackend struct {
	graphNodes
	m      *model
	p      *pool.Pool
	st     cudart.Stream
	h      *cublas.Handle
	bufs   buffers
	graphs capture.ByRows // nil launching call by call
	mu     sync.Mutex
}

func newMutexBackend(m *model, lib *cublas.Library, batches []int, graphs bool) (_ *mutexBackend, err error) {
	b := &mutexBackend{m: m}
	if b.st, err = m.rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	most := slices.Max(batches)
	in, out, act := uint64(4*m.Dims[0]*most), uint64(4*m.Dims[layers]*most), m.actBytes(most)
	const slack = 4 << 10 // rounding of each buffer to 256 B
	if b.p, err = pool.New(m.rt, pool.WithDeviceBytes(2*act+m.Bytes()+workspace+slack), pool.WithHostBytes(in+out+slack),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(b.st)); err != nil {
		return nil, errors.Join(err, m.rt.StreamDestroy(dev, b.st))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	var bin, bout, x, y, w, ws *pool.Buffer
	for _, r := range []struct {
		buf  **pool.Buffer
		want func(uint64, ...pool.WantOption) (*pool.Buffer, error)
		size uint64
		name string
	}{
		{&bin, b.p.WantHost, in, "in"}, {&bout, b.p.WantHost, out, "out"},
		{&x, b.p.WantDevice, act, "x"}, {&y, b.p.WantDevice, act, "y"}, {&w, b.p.WantDevice, m.Bytes(), "params"},
		{&ws, b.p.WantDevice, workspace, "cublas workspace"},
	} {
		if *r.buf, err = r.want(r.size, pool.Name(r.name)); err != nil {
			return nil, err
		}
	}
	if err := b.p.Commit(); err != nil {
		return nil, err
	}
	for _, e := range []error{
		ptrTo(&b.bufs.x, x), ptrTo(&b.bufs.y, y), ptrTo(&b.bufs.w, w),
		bytesOf(&b.bufs.in, bin), bytesOf(&b.bufs.out, bout),
	} {
		if e != nil {
			return nil, e
		}
	}
	if err := m.loadParams(b.bufs.w); err != nil {
		return nil, err
	}
	if b.h, err = lib.NewHandle(dev, b.st); err != nil {
		return nil, err
	}
	if err := b.h.SetWorkspace(ws); err != nil {
		return nil, err
	}
	if graphs {
		if b.graphs, err = m.captureEach(b.st, b.h, b.bufs, batches, &b.graphNodes); err != nil {
			return nil, err
		}
	}
	return b, nil
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
	return waited, b.m.run(b.st, b.h, b.bufs, rows, g, x)
}

func (b *mutexBackend) pooled() uint64 { return b.p.Stats().Device.Mapped }

// close gives back what newMutexBackend made, the handle before the pool
// that holds its workspace.
func (b *mutexBackend) close() error {
	errs := []error{b.graphs.Destroy(b.m.rt, dev), b.h.Close()}
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
