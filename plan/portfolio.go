package plan

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// portfolio runs the exact search on one part as a sequence of jobs: job j
// searches with ranker j mod len(rankers) and a node limit that doubles
// every round of rankers, so a ranker that leads the search astray costs
// little before another is tried (restarts). Workers, one a core, take jobs
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
		wg      sync.WaitGroup
	)
	ranks := make([][]int32, len(rankers))
	for k, r := range rankers {
		ranks[k] = r(pf.l, p)
	}
	workers := make([]*portfolioWorker, nw)
	for w := range workers {
		workers[w] = &portfolioWorker{d: newDFS(pf.l, pf.capacity, pf.stop)}
	}
	// take hands the next job to a worker, or -1 when the sequence is over:
	// a job has decided, the budget is spent, or time is up.
	take := func(wk *portfolioWorker) (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		j := next
		limit := jobLimit(len(p.items), j)
		if j >= decided || pf.stop.done() || pf.spent > pf.budget-limit {
			budgetd = budgetd || pf.spent > pf.budget-limit
			return -1, 0
		}
		next++
		pf.spent += limit
		wk.job = j
		wk.quit.Store(false)
		return j, limit
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
	for _, wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.d.quit = &wk.quit
			for {
				j, limit := take(wk)
				if j < 0 {
					return
				}
				finish(wk, j, wk.d.solve(p, ranks[j%int64(len(rankers))], limit))
			}
		}()
	}
	wg.Wait()
	switch {
	case decided < math.MaxInt64:
		// Jobs after the deciding one may have started, depending on
		// timing; the budget is charged as if they had not.
		pf.spent = 0
		for j := range decided + 1 {
			pf.spent += jobLimit(len(p.items), j)
		}
		return outcome, offs
	case budgetd && !pf.stop.done():
		return outOfNodes, nil
	}
	return stopped, nil
}

// jobLimit is job j's node limit: per item, firstLimit doubled once a round.
func jobLimit(items int, j int64) int64 {
	round := j / int64(len(rankers))
	if round >= 40 {
		return math.MaxInt64 / 4
	}
	return min(int64(items)*firstLimit<<round, math.MaxInt64/4)
}
