package ncclabi

import (
	"runtime"

	"github.com/cudapool/cudapool/internal/dl"
)

// Lib is libnccl, loaded: the address of every function of the table it
// has, 0 for an optional one it lacks.
type Lib struct {
	fns       []uintptr // by Call
	initRank  initRankFunc
	setDevice func(device int) error
}

// symbols is the table as the loader looks it up.
func symbols() []dl.Symbol {
	s := make([]dl.Symbol, Count)
	for c := range Count {
		s[c] = dl.Symbol{Name: c.String(), Optional: c.Optional()}
	}
	return s
}

// Load opens the first of paths that loads and exports every function of
// the table but the optional ones; the error is a *dl.Failure. setDevice
// makes a device current on the calling OS thread, which stays locked from
// it to the end of each batch. The library is never unloaded: NCCL runs
// threads of its own.
func Load(paths []string, setDevice func(device int) error) (*Lib, string, error) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		// The unique id passed by value is proven on these two ABIs.
		f := &dl.Failure{}
		for _, p := range paths {
			f.Tried = append(f.Tried, p+": no NCCL call ABI on "+runtime.GOARCH)
		}
		return nil, "", f
	}
	l, err := dl.Open(paths, symbols(), dl.Resident)
	if err != nil {
		return nil, "", err
	}
	lib := &Lib{fns: l.Fns, setDevice: setDevice}
	dl.Bind(&lib.initRank, l.Fns[CommInitRankConfig])
	return lib, l.Path, nil
}

// Has reports whether the library exports c.
func (l *Lib) Has(c Call) bool { return c < Count && l.fns[c] != 0 }

// Do makes the calls on one locked OS thread: NCCL keeps the state of a
// group (ncclGroupStart to ncclGroupEnd) per thread. After a call of a group
// fails, the group's other calls are skipped but its ncclGroupEnd is made,
// which closes the group NCCL has dropped.
func (l *Lib) Do(fs []Frame) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	depth, failed := 0, -1
	for i := range fs {
		f := &fs[i]
		switch {
		case f.Call == GroupStart:
			depth++
		case f.Call == GroupEnd:
			depth--
		case failed >= 0:
			continue
		}
		if f.Call.Device() {
			if err := l.setDevice(f.Device); err != nil {
				l.closeGroups(depth)
				return i, err
			}
		}
		l.call(f)
		if f.Result != Success && f.Result != InProgress && failed < 0 {
			failed = i
		}
		if failed >= 0 && depth == 0 {
			break
		}
	}
	if failed >= 0 {
		return failed + 1, nil
	}
	return len(fs), nil
}

// closeGroups ends the groups left open on the thread, which is about to
// be unlocked and used by other goroutines.
func (l *Lib) closeGroups(depth int) {
	for range depth {
		f := Frame{Call: GroupEnd}
		l.call(&f)
	}
}

// call makes f's call. The frame lives on the heap (the caller's slice),
// so the addresses of its out-slot, id and configuration stay valid while
// C reads and writes them.
func (l *Lib) call(f *Frame) {
	fn := l.fns[f.Call]
	if fn == 0 {
		f.Result = InvalidUsage
		return
	}
	out, cfg := dl.Addr(&f.Out), dl.Addr(&f.Config)
	i32, t, op := dl.Int, dl.Int(int32(f.Type)), dl.Int(int32(f.Op))
	var r uintptr
	switch f.Call {
	case GetVersion:
		r = dl.Call(fn, out)
	case GetUniqueID:
		r = dl.Call(fn, dl.Addr(&f.ID))
	case CommInitRankConfig:
		f.Result = Result(l.initRank(&f.Out, f.NRanks, cUniqueID{f.ID}, f.Rank, &f.Config))
		return
	case CommSplit:
		r = dl.Call(fn, f.Comm, i32(f.Color), i32(f.Key), out, cfg)
	case CommFinalize, CommDestroy, CommAbort:
		r = dl.Call(fn, f.Comm)
	case CommGetAsyncError, CommCount, CommUserRank:
		r = dl.Call(fn, f.Comm, out)
		f.Out = uint64(int32(uint32(f.Out)))
	case GetErrorString:
		f.Str, f.Result = dl.GoString(dl.Call(fn, i32(f.Int))), Success
		return
	case GetLastError:
		f.Str, f.Result = dl.GoString(dl.Call(fn, f.Comm)), Success
		return
	case GroupStart, GroupEnd:
		r = dl.Call(fn)
	case AllReduce, ReduceScatter:
		r = dl.Call(fn, f.Send, f.Recv, uintptr(f.Count), t, op, f.Comm, f.Stream)
	case AllGather:
		r = dl.Call(fn, f.Send, f.Recv, uintptr(f.Count), t, f.Comm, f.Stream)
	case Broadcast:
		r = dl.Call(fn, f.Send, f.Recv, uintptr(f.Count), t, i32(f.Peer), f.Comm, f.Stream)
	case Reduce:
		r = dl.Call(fn, f.Send, f.Recv, uintptr(f.Count), t, op, i32(f.Peer), f.Comm, f.Stream)
	case Send:
		r = dl.Call(fn, f.Send, uintptr(f.Count), t, i32(f.Peer), f.Comm, f.Stream)
	case Recv:
		r = dl.Call(fn, f.Recv, uintptr(f.Count), t, i32(f.Peer), f.Comm, f.Stream)
	case CommRegister:
		r = dl.Call(fn, f.Comm, f.Send, uintptr(f.Size), out)
	case CommDeregister, CommWindowDeregister:
		r = dl.Call(fn, f.Comm, f.Handle)
	case CommWindowRegister:
		r = dl.Call(fn, f.Comm, f.Send, uintptr(f.Size), out, i32(f.Flags))
	}
	f.Result = Result(int32(uint32(r)))
}

// cUniqueID is ncclUniqueId as C declares it: a struct of 128 bytes,
// passed by value.
type cUniqueID struct{ internal UniqueID }

// initRankFunc is ncclCommInitRankConfig's C signature. Its id is a struct
// over 16 bytes passed by value, which the words of dl.Call cannot carry
// (amd64 passes it on the stack between register arguments, arm64 by the
// address of a copy): dl.Bind lays it out.
type initRankFunc func(comm *uint64, nranks int32, id cUniqueID, rank int32, config *Config) int32
