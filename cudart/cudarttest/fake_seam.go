package cudarttest

import "github.com/cudapool/cudapool/cudart"

// This file is the seam between the fake's stream work and how it runs. It
// holds the simplest form: work runs when it is issued. The strict form, a
// queue per stream run at synchronisation points, replaces this file, and
// must keep two rules of stream capture that live in fake_capture.go: work
// issued to a capturing stream is recorded (f.graph.record), and a
// synchronisation point that involves a capturing stream is refused
// (f.captureBlocksSync).

// enqueue issues op, the work of call on stream s of device dev, whose
// arguments the caller has checked. It runs op at once and returns its
// failure, unless s is capturing: then op is recorded into the capture, to
// run each time its graph is launched.
func (f *Fake) enqueue(dev int, s cudart.Stream, call cudart.Call, op func() *failure) *failure {
	if f.graph.record(s, call, op) {
		return nil
	}
	return op()
}

// drain is the synchronisation point of stream s of device dev (the legacy
// default stream for the synchronous calls): work issued to s has run when
// it returns. Work runs when issued here, so it only refuses a
// synchronisation with a capturing stream.
func (f *Fake) drain(dev int, s cudart.Stream) *failure {
	return f.captureBlocksSync(dev, s)
}
