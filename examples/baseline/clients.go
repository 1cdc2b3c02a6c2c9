package baseline

import (
	"errors"
	"math"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
)

// Sizes are the memory each client of Clients takes, in bytes: In and Out
// of pinned staging, and Act for each of two device activations, 0 where
// they are taken in each request instead (cudaMallocAsync).
type Sizes struct{ In, Out, Act uint64 }

// Client is one client's stream, pinned staging (cudaMallocHost) and
// activations (cudaMalloc, 0 where Sizes.Act is 0). Graphs, the client's
// graphs by batch rows, nil launching call by call, are the example's to
// capture and Close's to destroy.
type Client struct {
	Stream  cudart.Stream
	In, Out []byte
	X, Y    cudart.DevicePtr
	Graphs  capture.ByRows
}

// Clients serve each client of the load generator with its own stream and
// memory, taken once: no pool, no lock, no hand-off.
type Clients struct {
	rt  cudart.Full
	dev int
	All []Client
}

// NewClients makes n clients on device dev, each taking sizes. A failure
// leaves nothing made.
func NewClients(rt cudart.Full, dev, n int, sizes Sizes) (_ *Clients, err error) {
	cs := &Clients{rt: rt, dev: dev, All: make([]Client, 0, n)}
	defer func() {
		if err != nil {
			err = errors.Join(err, cs.Close(nil))
		}
	}()
	for range n {
		// Kept from the start, for Close to free what was taken.
		cs.All = append(cs.All, Client{})
		c := &cs.All[len(cs.All)-1]
		if c.Stream, err = rt.StreamCreate(dev); err != nil {
			return nil, err
		}
		if c.In, err = rt.MallocHost(dev, sizes.In); err != nil {
			return nil, err
		}
		if c.Out, err = rt.MallocHost(dev, sizes.Out); err != nil {
			return nil, err
		}
		for _, d := range []*cudart.DevicePtr{&c.X, &c.Y} {
			if sizes.Act == 0 {
				break
			}
			if *d, err = rt.Malloc(dev, sizes.Act); err != nil {
				return nil, err
			}
		}
	}
	return cs, nil
}

// Serve runs one request of rows batch rows of client i: run with the
// client and its graph of rows (0 launching call by call). A client waits
// for nothing but its own work: waited is 0.
func (cs *Clients) Serve(i, rows int, run func(c *Client, g cudart.GraphExec) error) (waited time.Duration, err error) {
	c := &cs.All[i]
	g, err := c.Graphs.For(rows)
	if err != nil {
		return 0, err
	}
	return 0, run(c, g)
}

// Close destroys each client's graphs, waits for its stream, calls
// onStream(i), when not nil, for what works on client i's stream (its
// cuBLAS handle), destroys the stream and frees the client's memory.
func (cs *Clients) Close(onStream func(i int) error) error {
	var errs []error
	for i, c := range cs.All {
		errs = append(errs, c.Graphs.Destroy(cs.rt, cs.dev))
		if c.Stream != 0 {
			errs = append(errs, cs.rt.StreamSynchronize(cs.dev, c.Stream))
		}
		if onStream != nil {
			errs = append(errs, onStream(i))
		}
		if c.Stream != 0 {
			errs = append(errs, cs.rt.StreamDestroy(cs.dev, c.Stream))
		}
		for _, h := range [][]byte{c.In, c.Out} {
			if h != nil {
				errs = append(errs, cs.rt.FreeHost(h))
			}
		}
		for _, d := range []cudart.DevicePtr{c.X, c.Y} {
			if d != 0 {
				errs = append(errs, cs.rt.Free(cs.dev, d))
			}
		}
	}
	cs.All = nil
	return errors.Join(errs...)
}

// KeepFreed makes device dev's default memory pool keep what
// cudaFreeAsync gives back, its release threshold at its maximum, as a
// tuned server sets it; restore puts the threshold back.
func KeepFreed(rt cudart.Full, dev int) (restore func() error, err error) {
	threshold, err := rt.MemPoolReleaseThreshold(dev)
	if err != nil {
		return nil, err
	}
	if err := rt.SetMemPoolReleaseThreshold(dev, math.MaxUint64); err != nil {
		return nil, err
	}
	return func() error { return rt.SetMemPoolReleaseThreshold(dev, threshold) }, nil
}
