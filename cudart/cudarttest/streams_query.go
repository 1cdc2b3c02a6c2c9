package cudarttest

import "github.com/cudapool/cudapool/cudart"

// query is what a query (cudaStreamQuery, cudaEventQuery) has learnt of
// the work it would run, as it decides whether all of it can. A query lets
// the work it asks about progress as a GPU would, without ever showing the
// host a result before the host has learnt that the work is done: it runs
// all of that work, and what it waits for, and answers done, or runs none
// of it and answers not ready. It answers not ready, running nothing, the
// first time it sees a piece of work (the work it asks about includes work
// queued since the last such query), as CUDA may while the work runs
// (WithLongWork: every time); and whenever some of the work cannot run yet,
// as a piece of a collective whose peers have not queued their parts. A
// later query runs it once it can.
type query struct {
	f *Fake
	// state is, by the id of queued work, whether it can run; asking while
	// that is being decided, which a question about it then takes as yes:
	// the work asks it of work that waits for it in turn, as the pieces of
	// a collective do of each other, and such pieces run together.
	state map[uint64]readiness
}

// readiness is what a query learnt of one piece of queued work.
type readiness int8

const (
	unasked readiness = iota
	asking
	canRun
	cannotRun
)

// poll is a query's part for the work of s on device dev up to the work
// of id upto (all of it for upToAll): whether it has run, after running it
// if it could. seen is the latest work the same question saw before, which
// poll moves on.
func (f *Fake) poll(dev int, s cudart.Stream, upto uint64, seen *uint64) (bool, *failure) {
	ds := &f.devs[dev]
	// The legacy default stream is done only when all of the device's work
	// is, as CUDA answers.
	all := canonical(s) == legacyStream && upto == upToAll
	var work []int
	if all {
		for i := range ds.queue {
			work = append(work, i)
		}
	} else {
		f.due(dev, s, upto, func(i int) { work = append(work, i) })
	}
	if len(work) == 0 {
		return true, nil
	}
	var newest uint64
	for _, i := range work {
		newest = max(newest, ds.queue[i].id)
	}
	if newest > *seen || f.opts.longWork {
		*seen = newest
		return false, nil
	}
	q := &query{f: f, state: make(map[uint64]readiness)}
	for _, i := range work {
		if !q.runs(dev, &ds.queue[i]) {
			return false, nil
		}
	}
	var x *failure
	if all {
		x = f.syncDevice(dev)
	} else {
		x = f.runUpTo(dev, s, upto)
	}
	return x == nil, x
}

// runs reports whether p, queued on device dev, can run now.
func (q *query) runs(dev int, p *pending) bool {
	switch q.state[p.id] {
	case asking, canRun:
		return true
	case cannotRun:
		return false
	}
	if p.ready == nil {
		return true
	}
	q.state[p.id] = asking
	ok := p.ready(&Progress{q: q, dev: dev, at: p, key: p.key()})
	q.state[p.id] = cannotRun
	if ok {
		q.state[p.id] = canRun
	}
	return ok
}

// reaches reports whether runUpTo(dev, s, upto) could run all it runs.
func (q *query) reaches(dev int, s cudart.Stream, upto uint64) bool {
	ok := true
	q.f.due(dev, s, upto, func(i int) {
		ok = ok && q.runs(dev, &q.f.devs[dev].queue[i])
	})
	return ok
}

// Progress is what a library's Work.Ready sees of the fake's queues while
// a query decides whether the work it asks about can run, which it runs
// only if all of it can. It is valid only while Ready runs.
type Progress struct {
	q   *query
	dev int
	at  *pending // the queued work asked about
	key any      // the Work.Key of the work whose Ready asks
}

// asking is p as the Ready of t, a step of the work p asks about, sees it.
func (p *Progress) asking(t task) *Progress {
	return &Progress{q: p.q, dev: p.dev, at: p.at, key: t.key()}
}

// Reaches reports whether stream s of device, run up to and including its
// n-th work of key (Work.Key; a graph's launch that holds it), could run
// all of that and what it waits for, as Access.Wait would run it n times.
// It reports false when fewer than n works of key are queued on s, or s is
// no stream of device.
func (p *Progress) Reaches(device int, s cudart.Stream, key any, n int) bool {
	f := p.q.f
	if f.ownStream(device, s) != nil {
		return false
	}
	s = canonical(s)
	for _, w := range f.devs[device].queue {
		if w.stream != s || !w.holds(key) {
			continue
		}
		if n--; n == 0 {
			return p.q.reaches(device, s, w.id)
		}
	}
	return false
}

// Earlier is how many works of the asking work's key are queued before the
// one asked about on its stream: the runs of the same work (a graph's
// launches) that come first.
func (p *Progress) Earlier() int {
	if p.key == nil {
		return 0
	}
	n := 0
	for _, w := range p.q.f.devs[p.dev].queue {
		if w.id < p.at.id && w.stream == p.at.stream && w.holds(p.key) {
			n++
		}
	}
	return n
}
