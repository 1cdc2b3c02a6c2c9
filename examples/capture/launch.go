package capture

import "github.com/cudapool/cudapool/cudart"

// Run runs one request's work on stream s of device dev and waits for it:
// graph g where g is not 0, else the calls enqueue queues, one by one.
func Run(rt cudart.Full, dev int, s cudart.Stream, g cudart.GraphExec, enqueue func() error) error {
	var err error
	if g != 0 {
		err = rt.GraphLaunch(dev, g, s)
	} else {
		err = enqueue()
	}
	if err != nil {
		return err
	}
	return rt.StreamSynchronize(dev, s)
}
