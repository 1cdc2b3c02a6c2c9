package baseline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/pinned"
	"github.com/cudapool/cudapool/pool"
)

// Want is one buffer of a Mutex's pool: its name, its size in bytes, and
// whether it is pinned host memory or device memory.
type Want struct {
	Name string
	Size uint64
	Host bool
}

// slack is what the pool holds beyond the wants' sizes: each buffer is
// rounded to 256 B.
const slack = 4 << 10

// Mutex is one pool of the buffers a request needs, committed once, and
// one stream, serving one request at a time behind a mutex.
type Mutex struct {
	rt     cudart.Full
	dev    int
	Pool   *pool.Pool
	Stream cudart.Stream
	// Buffers are the wants' buffers by name, Host the host memory of the
	// host ones, Device the address of the device ones.
	Buffers map[string]*pool.Buffer
	Host    map[string][]byte
	Device  map[string]cudart.DevicePtr
	// Graphs are the graphs Serve launches, by batch rows: nil launches
	// call by call. The example captures them once it has filled the
	// buffers; Close destroys them.
	Graphs capture.ByRows
	mu     sync.Mutex
}

// NewMutex makes a stream on device dev and a pool on it holding wants,
// host memory pinned with cudaHostAlloc, and commits it. Each want has a
// name of its own. A failure leaves nothing made.
func NewMutex(rt cudart.Full, dev int, wants []Want) (_ *Mutex, err error) {
	b := &Mutex{rt: rt, dev: dev, Buffers: map[string]*pool.Buffer{}, Host: map[string][]byte{}, Device: map[string]cudart.DevicePtr{}}
	var deviceBytes, hostBytes uint64 = slack, slack
	for _, w := range wants {
		if _, ok := b.Buffers[w.Name]; ok {
			return nil, fmt.Errorf("baseline: two wants called %q: a buffer is found by its name", w.Name)
		}
		b.Buffers[w.Name] = nil
		if w.Host {
			hostBytes += w.Size
		} else {
			deviceBytes += w.Size
		}
	}
	if b.Stream, err = rt.StreamCreate(dev); err != nil {
		return nil, err
	}
	if b.Pool, err = pool.New(rt, pool.WithDevice(dev), pool.WithDeviceBytes(deviceBytes), pool.WithHostBytes(hostBytes),
		pool.WithHostPinning(pinned.MethodHostAlloc), pool.WithStreams(b.Stream)); err != nil {
		return nil, errors.Join(err, rt.StreamDestroy(dev, b.Stream))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Close())
		}
	}()
	for _, w := range wants {
		want := b.Pool.WantDevice
		if w.Host {
			want = b.Pool.WantHost
		}
		if b.Buffers[w.Name], err = want(w.Size, pool.Name(w.Name)); err != nil {
			return nil, err
		}
	}
	if err := b.Pool.Commit(); err != nil {
		return nil, err
	}
	for _, w := range wants {
		buf := b.Buffers[w.Name]
		if w.Host {
			b.Host[w.Name], err = buf.Bytes()
		} else {
			b.Device[w.Name], err = buf.Ptr()
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Serve runs one request of rows batch rows: once it holds the mutex, run
// with the graph of rows (0 where b launches call by call). waited is how
// long it waited for the mutex.
func (b *Mutex) Serve(rows int, run func(g cudart.GraphExec) error) (waited time.Duration, err error) {
	g, err := b.Graphs.For(rows)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	b.mu.Lock()
	waited = time.Since(start)
	defer b.mu.Unlock()
	return waited, run(g)
}

// Close gives back what NewMutex made and the graphs: the graphs first,
// then each of inPool (what works in the pool's memory, such as a cuBLAS
// handle with its workspace there), then the pool and the stream.
func (b *Mutex) Close(inPool ...func() error) error {
	errs := []error{b.Graphs.Destroy(b.rt, b.dev)}
	b.Graphs = nil
	for _, c := range inPool {
		errs = append(errs, c())
	}
	if b.Pool != nil {
		errs = append(errs, b.Pool.Close())
		b.Pool = nil
	}
	errs = append(errs, b.rt.StreamDestroy(b.dev, b.Stream))
	return errors.Join(errs...)
}
