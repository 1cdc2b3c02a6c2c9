package cudarttest

import (
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// Library is the hook through which the fake of a library built on CUDA
// reaches a Fake: cuBLAS's, beside its binding in package cublas, and
// NCCL's. The library's binding, opened on a fake, attaches its fake with
// Attach, and the fake uses the Library it is given, and nothing else of
// the Fake:
//
//   - Injected tells it which of its calls FailCall or FailCallNth is to
//     fail: from the first Attach they take the library's call names.
//   - SetDevice and StreamDevice check a device and a stream as the calls
//     that select them would.
//   - Make, Free and Live account for what it holds on a device: the
//     device memory it takes shows in MemGetInfo, a handle never freed is a
//     leak CheckLeaks lists with where it was made (and counts in
//     Usage.LibraryHandles), and DeviceReset destroys the device's.
//   - Enqueue queues its work on a stream: the work runs in stream order
//     when a synchronisation reaches it, or a query that finds it can run
//     (Work.Ready), reading and writing device memory
//     through an Access that checks each access as a kernel's is; its error
//     is the device's sticky fault, returned from that synchronisation and
//     every later call, as a faulting kernel's is; a capture records it as
//     a kernel node, which is what CUDA records for a library's work.
//   - Synchronize runs a device's work, or a stream's, for the library
//     calls CUDA documents as synchronising.
//
// The library's calls are its own, not the runtime's: Calls does not list
// them and FailNth does not count them.
//
// # Collectives
//
// Work that must reach the streams of several devices before it runs (a
// collective of NCCL's ranks) is one Work per stream, each queued on its
// rank's device, all in one EnqueueAll where one call of the library
// launches them, and the library coordinates them. Each piece, named by its
// Work.Key, when it runs, marks its rank reached and waits for each rank
// not yet reached with Access.Wait, which runs what is queued on that
// rank's stream up to that rank's piece (which then finds its own peers)
// as a stream's wait for an event recorded on another does; the piece that
// finds every rank reached computes the collective, reaching each device's
// memory through Access.On, and the others find it done. Its Work.Ready
// asks, through Progress.Reaches, whether each rank not yet reached has its
// piece queued behind work that can run: a query runs the collective only
// then, as a GPU's kernel of a collective ends only once every peer's has
// started; a synchronisation runs it whatever Ready says, and a piece whose
// peer's is missing fails. Pieces run one at a time, under the fake's lock,
// so what only they touch needs no lock of its own. A rank's piece can be
// waited for only once it is queued, and queueing it takes the fake's lock,
// which running work holds: the library's call blocks, for a bounded time,
// until every rank has made its own call, as NCCL documents its calls may,
// and only then queues its rank's piece, so that by the time any piece runs
// every rank's earlier work is queued and its arguments known.
//
// # Caveats
//
// Each method takes the fake's lock for its own length only: two calls are
// not atomic together, so a library's fake serialises its calls with a lock
// of its own where that matters. Work.Run and Work.Ready run under the
// fake's lock, at the synchronisation or query of whichever goroutine makes
// it: they must not call the Fake's or the Library's methods, which would
// deadlock, nor wait for a lock the library holds while it calls them; Run
// reaches the device only through its Access, valid only while Run runs,
// and Ready the queues only through its Progress, valid only while Ready
// runs. No user code runs under the fake's lock.
type Library struct {
	f     *Fake
	name  string
	calls []string
	state any // what Attach made, fixed once set
}

// libraryState is what the fake keeps of the libraries attached to it.
type libraryState struct {
	attached  map[string]*Library
	resources map[uintptr]*resource
	next      uintptr
}

// Attach attaches the fake of the library name (e.g. "cuBLAS") to f and
// returns its state: made by state the first time, and the same value at
// every later Attach of name on f, so that what the library's fake keeps
// (its handles) lives as long as f, however many times its binding is
// opened. calls are the library's functions its fake answers, as C names
// them; from the first Attach FailCall and FailCallNth accept them, with or
// without the "_v2" the library's headers add. Attaching name again with
// another type of state panics: it is a bug in the library's fake.
func Attach[S any](f *Fake, name string, calls []string, state func(l *Library) S) S {
	f.mu.Lock()
	l := f.libs.attached[name]
	f.mu.Unlock()
	if l == nil {
		// state is the library's code: it runs without the fake's lock.
		made := &Library{f: f, name: name, calls: slices.Clone(calls)}
		made.state = state(made)
		f.mu.Lock()
		if l = f.libs.attached[name]; l == nil {
			if f.libs.attached == nil {
				f.libs.attached = make(map[string]*Library)
			}
			l = made
			f.libs.attached[name] = l
		}
		f.mu.Unlock()
	}
	return l.state.(S)
}

// lookupLibraryCall finds the library and the call of name among those
// attached.
func (f *Fake) lookupLibraryCall(name string) (target, bool) {
	for _, l := range f.libs.attached {
		for _, c := range l.calls {
			if name == c || name+"_v2" == c {
				return target{lib: l.name, libCall: c}, true
			}
		}
	}
	return target{}, false
}

// libraryCalls lists the calls of every library attached, sorted by
// library.
func (f *Fake) libraryCalls() []string {
	var names []string
	for _, l := range f.libs.attached {
		names = append(names, l.calls...)
	}
	slices.Sort(names)
	return names
}

// Injected reports whether a fault that FailCall or FailCallNth injected
// fails the library's call now, and with which code: the library's status
// (a cublasStatus_t, say). call is one of the names given to Attach. The
// library's fake asks it first in each call, before it changes anything: it
// counts FailCallNth's calls down.
func (l *Library) Injected(call string) (cudart.Code, bool) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.inject(func(x fault) bool { return x.lib == l.name && x.libCall == call })
	if x == nil {
		return 0, false
	}
	return x.code, true
}

// SetDevice is what cudaSetDevice(device) would return before the library's
// call, the call itself not logged: cudaErrorInvalidDevice for a device the
// fake lacks, the device's sticky fault, or cudaErrorDevicesUnavailable once
// it is lost.
func (l *Library) SetDevice(device int) error {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.usable(device); x != nil {
		return x.err(calls.SetDevice, "(%d)", device)
	}
	return nil
}

// usable checks device as one that exists and works.
func (f *Fake) usable(device int) *failure {
	if x := f.device(device); x != nil {
		return x
	}
	return f.broken(device)
}

// StreamDevice is the device stream s belongs to, device itself for the
// default streams, as Fake.StreamDevice answers it, the call not logged:
// cudaErrorInvalidResourceHandle for a stream that is not live, and the
// sticky fault of a device that has one.
func (l *Library) StreamDevice(device int, s cudart.Stream) (int, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	d, x := f.streamOn(device, s)
	if x != nil {
		return 0, x.err(calls.StreamGetDevice, "(0x%x)", uintptr(s))
	}
	return d, nil
}

// streamOn checks device and s, a stream the caller queues on for device,
// and returns the device of s.
func (f *Fake) streamOn(device int, s cudart.Stream) (int, *failure) {
	if x := f.usable(device); x != nil {
		return 0, x
	}
	return f.streamOf(device, s)
}
