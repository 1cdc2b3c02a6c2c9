package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/loadgen"

	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// The baselines' names in the tables: cudaMallocAsync's with its clients
// (asyncOf).
const (
	mutexName = "mutex pool"
	asyncName = "cudaMallocAsync"
)

// asyncOf is the name of cudaMallocAsync with clients clients.
func asyncOf(clients int) string { return asyncName + ", " + clientsOf(clients) }

// configuration is one backend to measure.
type configuration struct {
	name    string
	handles int // cuBLAS handles it makes
	make    func(graphs bool) (backend, error)
}

// measured is one timed run of a configuration at one batch size in one
// launch mode, or a series of them summed up (series.summary).
type measured struct {
	loadgen.Result
	clients int
	outside int64 // device bytes taken during the timed requests, outside any pool
	// runs is how many timed runs a summary stands for, lo and hi the
	// lowest and highest requests/s among them.
	runs   int
	lo, hi float64
}

// setup is what a configuration's setup took beside its pool's arena.
type setup struct {
	name    string
	handles int
	outside int64
}

// session is one run's shared state.
type session struct {
	rt      cudart.Full
	lib     *cublas.Library
	m       *model
	c       config
	loads   map[int]*mlpmodel.Workload
	worst   mlpmodel.Worst
	stderr  io.Writer
	results map[bool]map[int][]*series // [graphs][rows], in the order measured
	pairs   map[bool]map[int][]pairing // [graphs][rows], by slot count
	setups  []setup
	nodes   map[string]map[int]cudart.GraphNodeCounts // [configuration][rows], graphs only
}

// newSession is a run's state, with the CPU's reference of every batch
// size.
func newSession(lib *cublas.Library, m *model, c config, stderr io.Writer) *session {
	s := &session{rt: m.rt, lib: lib, m: m, c: c, loads: map[int]*mlpmodel.Workload{}, stderr: stderr,
		results: map[bool]map[int][]*series{true: {}, false: {}}, pairs: map[bool]map[int][]pairing{true: {}, false: {}}, nodes: map[string]map[int]cudart.GraphNodeCounts{}}
	fmt.Fprintln(stderr, "mlp: computing the CPU reference...")
	for _, rows := range c.batches {
		s.loads[rows] = mlpmodel.NewWorkload(m.Params, c.seed, rows)
	}
	return s
}

func measure(rt *choose.Runtime, c config, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	lib, err := cublas.Open(rt)
	if err != nil {
		return err
	}
	v, err := lib.Version()
	if err != nil {
		return err
	}
	dims := mlpmodel.Scaled(c.scale)
	m, err := newModel(rt, dims, c.seed)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.close()) }()
	fmt.Fprintf(stdout, "cuBLAS %s; model %d -> %d -> %d -> %d, FP32, parameters %s (%d B) from seed %d; batches %v\n",
		v, dims[0], dims[1], dims[2], dims[3], mib(m.Bytes()), m.Bytes(), c.seed, c.batches)
	s := newSession(lib, m, c, stderr)
	if c.corruptParams {
		// After the reference: the devices get a parameter the CPU did
		// not use.
		m.Values[m.OffW[1]] += 0.5
	}
	bw, err := copyBandwidth(rt, c.copyBytes)
	if err != nil {
		return fmt.Errorf("the copy bandwidth: %w", err)
	}
	fmt.Fprintf(stdout, "load: %d timed requests a run; slots and the mutex pool from %d concurrent clients, cudaMallocAsync from as many clients as the slots it is paired with (at most %d) and from %d for reference; before and after each run, untimed, a request a client (2 at least), every output compared with the CPU's\n",
		c.requests, c.clients, c.clients, c.clients)
	fmt.Fprintf(stdout, "pairs: slots=N, then cudaMallocAsync with N clients, %d times a batch and launch mode; the tables show each configuration's median run\n", c.repeat)
	fmt.Fprintln(stdout, "wait: for a slot (slots) or the lock (mutex pool); cudaMallocAsync shares nothing to wait for. service: the rest of the latency")
	for _, graphs := range c.launches {
		reference := false
		for _, n := range c.slots {
			k := min(n, c.clients)
			if err := s.measurePair(n, k, graphs); err != nil {
				return fmt.Errorf("slots=%d against %s, %s: %w", n, asyncOf(k), launchName(graphs), err)
			}
			reference = reference || k == c.clients
		}
		cfs := []configuration{s.mutexConf()}
		if !reference {
			cfs = append(cfs, s.asyncConf(c.clients))
		}
		for _, cf := range cfs {
			if err := s.measureOne(cf, graphs); err != nil {
				return fmt.Errorf("%s, %s: %w", cf.name, launchName(graphs), err)
			}
		}
	}
	launchBound, err := s.launchBound()
	if err != nil {
		return fmt.Errorf("1 client, batch %d: %w", c.batches[0], err)
	}
	s.report(stdout, bw, launchBound)
	fmt.Fprintf(stdout, "\nthe run took %v\n", loadgen.Round(time.Since(start)))
	if c.dump != "" {
		fmt.Fprintf(stderr, "mlp: writing %s...\n", c.dump)
		if err := s.dump(c.dump); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ndumped to %s: manifest.json and its files\n", c.dump)
	}
	if !rt.CUDA {
		fmt.Fprintln(stdout, "\n(fake runtime: not a GPU timing)")
	}
	return nil
}

// A configuration's constructors: slots=n, the mutex pool, and
// cudaMallocAsync with clients clients.
func (s *session) slotsConf(n int) configuration {
	return configuration{fmt.Sprintf("slots=%d", n), n, func(graphs bool) (backend, error) {
		return newSlotsBackend(s.m, s.lib, n, s.c.batches, graphs)
	}}
}

func (s *session) mutexConf() configuration {
	return configuration{mutexName, 1, func(graphs bool) (backend, error) { return newMutexBackend(s.m, s.lib, s.c.batches, graphs) }}
}

func (s *session) asyncConf(clients int) configuration {
	return configuration{asyncOf(clients), clients, func(graphs bool) (backend, error) {
		return newAsyncBackend(s.m, s.lib, clients, s.c.batches, graphs)
	}}
}

// open sets cf up, noting its graphs' nodes and, in the first launch mode,
// the device memory its setup took beside its pool's arena.
func (s *session) open(cf configuration, graphs bool) (backend, error) {
	free0, err := s.free()
	if err != nil {
		return nil, err
	}
	b, err := cf.make(graphs)
	if err != nil {
		return nil, err
	}
	free1, err := s.free()
	if err != nil {
		return nil, errors.Join(err, b.close())
	}
	if graphs {
		s.nodes[cf.name] = b.nodes()
	}
	if graphs == s.c.launches[0] {
		s.setups = append(s.setups, setup{cf.name, cf.handles, int64(free0) - int64(free1) - int64(b.pooled())})
	}
	return b, nil
}

// add files run r of the configuration name, whose clients sent it.
func (s *session) add(graphs bool, rows int, name string, clients int, r measured) {
	all := s.results[graphs][rows]
	i := slices.IndexFunc(all, func(se *series) bool { return se.name == name })
	if i < 0 {
		i = len(all)
		s.results[graphs][rows] = append(all, &series{name: name, clients: clients})
	}
	se := s.results[graphs][rows][i]
	se.runs = append(se.runs, r)
}

// table is one batch size's configurations in one launch mode, each as its
// median run, in the order measured.
func (s *session) table(graphs bool, rows int) []measured {
	var out []measured
	for _, se := range s.results[graphs][rows] {
		out = append(out, se.summary())
	}
	return out
}

// measurePair sets slots=n and cudaMallocAsync with clients clients up,
// side by side, and at every batch size measures the one then the other,
// -repeat times: slots from -clients clients, never more than n requests
// in flight; the baseline with clients requests in flight, each client
// its own stream and handle.
func (s *session) measurePair(n, clients int, graphs bool) (err error) {
	sc, ac := s.slotsConf(n), s.asyncConf(clients)
	sb, err := s.open(sc, graphs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sb.close()) }()
	ab, err := s.open(ac, graphs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ab.close()) }()
	for _, rows := range s.c.batches {
		p := pairing{slots: n, clients: clients}
		for rep := range s.c.repeat {
			fmt.Fprintf(s.stderr, "mlp: %s, batch %d, %s then %s, run %d of %d: %d requests each...\n",
				launchName(graphs), rows, sc.name, ac.name, rep+1, s.c.repeat, s.c.requests)
			r, err := s.measureBatch(sb, s.c.clients, rows)
			if err != nil {
				return fmt.Errorf("%s, batch %d: %w", sc.name, rows, err)
			}
			base, err := s.measureBatch(ab, clients, rows)
			if err != nil {
				return fmt.Errorf("%s, batch %d: %w", ac.name, rows, err)
			}
			s.add(graphs, rows, sc.name, s.c.clients, r)
			s.add(graphs, rows, ac.name, clients, base)
			p.ratios = append(p.ratios, r.PerSecond/base.PerSecond)
		}
		s.pairs[graphs][rows] = append(s.pairs[graphs][rows], p)
	}
	return nil
}

// measureOne sets cf up and measures it once at every batch size, from
// -clients clients.
func (s *session) measureOne(cf configuration, graphs bool) (err error) {
	b, err := s.open(cf, graphs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	for _, rows := range s.c.batches {
		fmt.Fprintf(s.stderr, "mlp: %s, %s, batch %d: %d requests...\n", launchName(graphs), cf.name, rows, s.c.requests)
		r, err := s.measureBatch(b, s.c.clients, rows)
		if err != nil {
			return fmt.Errorf("batch %d: %w", rows, err)
		}
		s.add(graphs, rows, cf.name, s.c.clients, r)
	}
	return nil
}

// measureBatch runs a full check pass (the warm-up), the timed requests
// between two readings of the device's free memory, and a full check pass,
// each from clients clients; the check passes send a request a client, 2
// at least, so that every input variant is checked.
func (s *session) measureBatch(b backend, clients, rows int) (measured, error) {
	w := s.loads[rows]
	pass := func(n int, full *mlpmodel.Worst) (loadgen.Result, error) {
		x := requests(w, clients, full)
		return loadgen.Run(clients, n, func(c, i int) (time.Duration, error) {
			return b.serve(context.Background(), c, rows, x(c, i))
		})
	}
	checked := max(clients, mlpmodel.Variants)
	if _, err := pass(checked, &s.worst); err != nil {
		return measured{}, fmt.Errorf("check before: %w", err)
	}
	before, err := s.free()
	if err != nil {
		return measured{}, err
	}
	r, err := pass(s.c.requests, nil)
	if err != nil {
		return measured{}, err
	}
	after, err := s.free()
	if err != nil {
		return measured{}, err
	}
	if _, err := pass(checked, &s.worst); err != nil {
		return measured{}, fmt.Errorf("check after: %w", err)
	}
	return measured{Result: r, clients: clients, outside: int64(before) - int64(after)}, nil
}

// launchBound measures 1 client at the smallest batch: a slot launching one
// graph a request, the same slot launching call by call, and
// cudaMallocAsync launching call by call.
func (s *session) launchBound() ([]measured, error) {
	rows := slices.Min(s.c.batches)
	var out []measured
	for _, graphs := range []bool{true, false} {
		cfs := []configuration{s.slotsConf(1)}
		if !graphs {
			cfs = append(cfs, s.asyncConf(1))
		}
		for _, cf := range cfs {
			fmt.Fprintf(s.stderr, "mlp: 1 client, batch %d, %s, %s: %d requests...\n", rows, cf.name, launchName(graphs), s.c.requests)
			r, err := s.launchOne(cf, graphs, rows)
			if err != nil {
				return nil, err
			}
			r.Name = fmt.Sprintf("%s, %s", cf.name, launchName(graphs))
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *session) launchOne(cf configuration, graphs bool, rows int) (_ measured, err error) {
	b, err := cf.make(graphs)
	if err != nil {
		return measured{}, err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	return s.measureBatch(b, 1, rows)
}

// free is the device's free memory.
func (s *session) free() (uint64, error) {
	f, _, err := s.rt.MemGetInfo(dev)
	return f, err
}

// launchName is how the tables name a launch mode.
func launchName(graphs bool) string {
	if graphs {
		return "one CUDA graph a request"
	}
	return "call by call"
}

// copyBandwidth is the device's device-to-device bandwidth: a
// cudaMemcpyAsync of n bytes between two events, the fastest of 5 after a
// warm-up copy, counting the bytes read and the bytes written. 0 where the
// events time nothing (the fake).
func copyBandwidth(rt cudart.Full, n uint64) (_ float64, err error) {
	var ptrs [2]cudart.DevicePtr
	var evs [2]cudart.Event
	var st cudart.Stream
	defer func() {
		for _, p := range ptrs {
			if p != 0 {
				err = errors.Join(err, rt.Free(dev, p))
			}
		}
		for _, e := range evs {
			if e != 0 {
				err = errors.Join(err, rt.EventDestroy(dev, e))
			}
		}
		if st != 0 {
			err = errors.Join(err, rt.StreamDestroy(dev, st))
		}
	}()
	for i := range ptrs {
		if ptrs[i], err = rt.Malloc(dev, n); err != nil {
			return 0, err
		}
		if evs[i], err = rt.EventCreate(dev); err != nil {
			return 0, err
		}
	}
	if st, err = rt.StreamCreate(dev); err != nil {
		return 0, err
	}
	src, dst := cudart.DeviceMem(ptrs[0], n), cudart.DeviceMem(ptrs[1], n)
	if err := rt.Memset(dev, ptrs[0], 0, n); err != nil {
		return 0, err
	}
	best := time.Duration(math.MaxInt64)
	for i := range 6 {
		if err := errors.Join(rt.EventRecord(dev, evs[0], st), rt.MemcpyAsync(dev, dst, src, cudart.DeviceToDevice, st),
			rt.EventRecord(dev, evs[1], st), rt.StreamSynchronize(dev, st)); err != nil {
			return 0, err
		}
		d, err := rt.EventElapsedTime(dev, evs[0], evs[1])
		if err != nil {
			return 0, err
		}
		if i > 0 {
			best = min(best, d)
		}
	}
	if best <= 0 {
		return 0, nil
	}
	return 2 * float64(n) / best.Seconds(), nil
}
