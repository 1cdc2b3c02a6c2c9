package plan

import (
	"cmp"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// portfolio runs the exact search on one part as a sequence of jobs, each a
// search from one order of the items under a node limit (see jobLimit), so
// that an order that leads the search astray costs little before another is
// tried (restarts). Workers, one a core, take jobs
// in sequence order, and the answer is that of the first job in the
// sequence that decides (finds a layout or proves there is none); a job
// still running when an earlier one decides is cancelled, and one that
// started before it is waited for. The answer therefore depends on the job
// sequence alone, never on which worker was faster.
type portfolio struct {
	l        *layout
	capacity uint64
	stop     *stopper
	// budget caps the sum of the node limits of the jobs run; the
	// sequence ends at the first job that would pass it. spent is that sum.
	budget, spent int64
	// err is the first panic of a worker, as an error; the search ends
	// with it.
	err error
}

// firstLimit is the node limit of the first round, per item: enough for a
// part the rankers lead straight to a layout, as on most real graphs.
const firstLimit = 2

type portfolioWorker struct {
	d    *dfs
	job  int64
	quit atomic.Bool
}

// solve searches part p. On fits it returns the part's offsets, in the
// order of p.items.
func (pf *portfolio) solve(p part) (verdict, []uint64) {
	nw := min(runtime.GOMAXPROCS(0), len(rankers))
	var (
		mu      sync.Mutex
		next    int64
		decided = int64(math.MaxInt64)
		outcome = noFit
		offs    []uint64
		budgetd bool
	)
	ranks := make([][]int32, len(rankers))
	heavy := make([]uint64, len(pf.l.items))
	pf.l.heaviest(p.items, pf.l.partTotals(p), heavy)
	for k, keys := range rankers {
		ranks[k] = make([]int32, len(pf.l.items))
		rankItems(pf.l, p.items, heavy, keys, ranks[k])
	}
	sched := &schedule{items: len(p.items)}
	workers := make([]*portfolioWorker, nw)
	for w := range workers {
		workers[w] = &portfolioWorker{d: newDFS(pf.l, pf.capacity, pf.stop)}
	}
	// take hands the next job to a worker, or -1 when the sequence is over:
	// a job has decided, the budget is spent, or time is up.
	take := func(wk *portfolioWorker) (int64, job) {
		mu.Lock()
		defer mu.Unlock()
		j := next
		jb := sched.at(j)
		if j >= decided || pf.err != nil || pf.stop.done() || pf.spent > pf.budget-jb.limit {
			budgetd = budgetd || pf.spent > pf.budget-jb.limit
			return -1, job{}
		}
		next++
		pf.spent += jb.limit
		wk.job = j
		wk.quit.Store(false)
		return j, jb
	}
	finish := func(wk *portfolioWorker, j int64, v verdict) {
		mu.Lock()
		defer mu.Unlock()
		if (v != fits && v != noFit) || j >= decided {
			return
		}
		decided, outcome = j, v
		if v == fits {
			offs = offs[:0]
			for _, i := range p.items {
				offs = append(offs, wk.d.off[i])
			}
		}
		for _, o := range workers {
			if o.job > j {
				o.quit.Store(true)
			}
		}
	}
	done := make(chan error, len(workers))
	for _, wk := range workers {
		guarded(func() {
			wk.d.quit = &wk.quit
			for {
				j, jb := take(wk)
				if j < 0 {
					return
				}
				finish(wk, j, wk.d.solve(p, jb.rank(ranks, p), jb.keys(), jb.limit))
			}
		}, done)
	}
	for range workers {
		if err := <-done; err != nil {
			// The first panic ends the search: the other workers stop
			// at their next poll.
			mu.Lock()
			pf.err = cmp.Or(pf.err, err)
			for _, o := range workers {
				o.quit.Store(true)
			}
			mu.Unlock()
		}
	}
	switch {
	case pf.err != nil:
		return crashed, nil
	case decided < math.MaxInt64:
		// Jobs after the deciding one may have started, depending on
		// timing; the budget is charged as if they had not.
		pf.spent = 0
		for j := range decided + 1 {
			pf.spent += sched.at(j).limit
		}
		return outcome, offs
	case budgetd && !pf.stop.done():
		return outOfNodes, nil
	}
	return stopped, nil
}

// schedule is the job sequence, built as it is consumed (under the
// portfolio's lock) and the same on every run. It draws from two streams,
// each time from the one that has been given fewer nodes so far, so that
// they share the search's time evenly whatever their limits. The plain
// stream searches with the rankers' orders as they are, with a node limit
// that doubles every round of rankers, so that a long search gets its
// chance. The perturbed stream searches with those orders perturbed at
// random (from a seed fixed by the job's place in the stream) under short
// limits that follow Luby's restart sequence: on hard instances a layout
// is often found within a few hundred nodes from some order close to a
// good one, which the long runs from the plain orders miss.
type schedule struct {
	items int
	jobs  []job
	// given and next are, per stream (plain, perturbed), the nodes handed
	// out so far and the place of the next job.
	given, next [2]int64
}

// job is one search of the sequence.
type job struct {
	perturbed bool
	// q is the job's place in its stream.
	q     int64
	limit int64
}

// at returns job j of the sequence.
func (s *schedule) at(j int64) job {
	for int64(len(s.jobs)) <= j {
		stream := 0
		if s.given[1] < s.given[0] {
			stream = 1
		}
		q := s.next[stream]
		jb := job{perturbed: stream == 1, q: q}
		if jb.perturbed {
			jb.limit = int64(s.items) * firstLimit * luby(q+1)
		} else if round := q / int64(len(rankers)); round < 40 {
			jb.limit = min(int64(s.items)*firstLimit<<round, math.MaxInt64/4)
		} else {
			jb.limit = math.MaxInt64 / 4
		}
		s.next[stream]++
		s.given[stream] = min(s.given[stream]+jb.limit, math.MaxInt64/2)
		s.jobs = append(s.jobs, jb)
	}
	return s.jobs[j]
}

// keys returns the keys the job ranks independent groups by, or nil for a
// perturbed job, whose order stays as it was drawn.
func (jb job) keys() []rankKey {
	if jb.perturbed {
		return nil
	}
	return rankers[jb.q%int64(len(rankers))]
}

// rank returns the ranks the job searches with.
func (jb job) rank(ranks [][]int32, p part) []int32 {
	base := ranks[jb.q%int64(len(ranks))]
	if !jb.perturbed {
		return base
	}
	r := rand.New(rand.NewPCG(uint64(jb.q), seed))
	spread := perturbation * float64(len(p.items))
	key := make([]float64, len(p.items))
	for k, i := range p.items {
		key[k] = float64(base[i]) + spread*r.NormFloat64()
	}
	order := sortedOrder(len(p.items), func(a, b int32) int { return cmp.Compare(key[a], key[b]) })
	rank := make([]int32, len(base))
	for pos, k := range order {
		rank[p.items[k]] = int32(pos)
	}
	return rank
}

// perturbation is the spread of the noise added to the ranks of a
// perturbed order, as a share of the number of items: enough to move an
// item some places, not so much that the order loses its sense.
const perturbation = 0.1

// luby returns the i-th term (from 1) of Luby's sequence 1, 1, 2, 1, 1, 2,
// 4, 1, 1, 2, ..., the restart schedule that is within a constant factor of
// the best for searches whose run times are unknown.
func luby(i int64) int64 {
	for k := int64(1); ; k++ {
		if i == 1<<k-1 {
			return 1 << (k - 1)
		}
		if i < 1<<k-1 {
			return luby(i - (1<<(k-1) - 1))
		}
	}
}
