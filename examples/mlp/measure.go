package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// The baselines' names in the tables.
const (
	mutexName = "mutex pool"
	asyncName = "cudaMallocAsync"
)

// configuration is one backend to measure.
type configuration struct {
	name    string
	handles int // cuBLAS handles it makes
	make    func(graphs bool) (backend, error)
}

// measured is one configuration at one batch size in one launch mode.
type measured struct {
	result
	outside int64 // device bytes taken during the timed requests, outside any pool
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
	loads   map[int]*workload
	worst   worst
	stderr  io.Writer
	results map[bool]map[int][]measured // [graphs][rows]
	setups  []setup
	nodes   map[string]map[int]cudart.GraphNodeCounts // [configuration][rows], graphs only
}

func measure(rt *cudarttest.Runtime, c config, stdout, stderr io.Writer) (err error) {
	// cublas.Open recognises the fake by its own type, not the wrapper's.
	lib, err := cublas.Open(rt.Full)
	if err != nil {
		return err
	}
	v, err := lib.Version()
	if err != nil {
		return err
	}
	var dims [4]int
	for i, d := range fullDims {
		dims[i] = d / c.scale
	}
	m, err := newModel(rt.Full, dims, c.seed)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.close()) }()
	s := &session{rt: rt.Full, lib: lib, m: m, c: c, loads: map[int]*workload{}, stderr: stderr,
		results: map[bool]map[int][]measured{true: {}, false: {}}, nodes: map[string]map[int]cudart.GraphNodeCounts{}}
	fmt.Fprintf(stdout, "cuBLAS %s; model %d -> %d -> %d -> %d, FP32, parameters %s (%d B) from seed %d; batches %v\n",
		v, dims[0], dims[1], dims[2], dims[3], mib(m.paramBytes()), m.paramBytes(), c.seed, c.batches)
	fmt.Fprintln(stderr, "mlp: computing the CPU reference...")
	for _, rows := range c.batches {
		s.loads[rows] = newWorkload(m, c.seed, rows)
	}
	if c.corruptParams {
		// After the reference: the devices get a parameter the CPU did
		// not use.
		m.params[m.offW[1]] += 0.5
	}
	bw, err := copyBandwidth(rt.Full, c.copyBytes)
	if err != nil {
		return fmt.Errorf("the copy bandwidth: %w", err)
	}
	fmt.Fprintf(stdout, "load: %d timed requests a configuration and batch from %d concurrent clients; before and after them %d untimed requests, every output compared with the CPU's\n",
		c.requests, c.clients, checked(c))
	fmt.Fprintln(stdout, "wait: for a slot (slots) or the lock (mutex pool); cudaMallocAsync shares nothing to wait for. service: the rest of the latency")
	for _, graphs := range c.launches {
		for _, cf := range s.configurations(c.clients, c.slots, true) {
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

// checked is the requests of each untimed check pass.
func checked(c config) int { return max(c.clients, variants) }

// configurations are the slot counts, then the baselines (the mutex pool
// if asked), for clients.
func (s *session) configurations(clients int, slots []int, mutex bool) []configuration {
	var out []configuration
	batches := s.c.batches
	for _, n := range slots {
		out = append(out, configuration{fmt.Sprintf("slots=%d", n), n, func(graphs bool) (backend, error) {
			return newSlotsBackend(s.m, s.lib, n, batches, graphs)
		}})
	}
	if mutex {
		out = append(out, configuration{mutexName, 1, func(graphs bool) (backend, error) { return newMutexBackend(s.m, s.lib, batches, graphs) }})
	}
	return append(out, configuration{asyncName, clients, func(graphs bool) (backend, error) {
		return newAsyncBackend(s.m, s.lib, clients, batches, graphs)
	}})
}

// measureOne sets cf up and measures it at every batch size.
func (s *session) measureOne(cf configuration, graphs bool) (err error) {
	free0, err := s.free()
	if err != nil {
		return err
	}
	b, err := cf.make(graphs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	free1, err := s.free()
	if err != nil {
		return err
	}
	if graphs {
		s.nodes[cf.name] = b.nodes()
	}
	// Read in the first launch mode only, before any cudaMallocAsync
	// configuration has run: the memory its pool gives back later would
	// show here.
	if graphs == s.c.launches[0] {
		s.setups = append(s.setups, setup{cf.name, cf.handles, int64(free0) - int64(free1) - int64(b.pooled())})
	}
	for _, rows := range s.c.batches {
		fmt.Fprintf(s.stderr, "mlp: %s, %s, batch %d: %d requests...\n", launchName(graphs), cf.name, rows, s.c.requests)
		r, err := s.measureBatch(b, s.c.clients, rows)
		if err != nil {
			return fmt.Errorf("batch %d: %w", rows, err)
		}
		r.name = cf.name
		s.results[graphs][rows] = append(s.results[graphs][rows], r)
	}
	return nil
}

// measureBatch runs a full check pass (the warm-up), the timed requests
// between two readings of the device's free memory, and a full check pass.
func (s *session) measureBatch(b backend, clients, rows int) (measured, error) {
	w := s.loads[rows]
	pass := func(n int, full *worst) (result, error) {
		x := requests(w, clients, full)
		return load(clients, n, func(c, i int) (time.Duration, error) {
			return b.serve(context.Background(), c, rows, x(c, i))
		})
	}
	if _, err := pass(checked(s.c), &s.worst); err != nil {
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
	if _, err := pass(checked(s.c), &s.worst); err != nil {
		return measured{}, fmt.Errorf("check after: %w", err)
	}
	return measured{r, int64(before) - int64(after)}, nil
}

// launchBound measures 1 client at the smallest batch: a slot launching one
// graph a request, the same slot launching call by call, and
// cudaMallocAsync launching call by call.
func (s *session) launchBound() ([]measured, error) {
	rows := slices.Min(s.c.batches)
	var out []measured
	for _, graphs := range []bool{true, false} {
		for _, cf := range s.configurations(1, []int{1}, false) {
			if graphs && cf.name == asyncName {
				continue
			}
			fmt.Fprintf(s.stderr, "mlp: 1 client, batch %d, %s, %s: %d requests...\n", rows, cf.name, launchName(graphs), s.c.requests)
			r, err := s.launchOne(cf, graphs, rows)
			if err != nil {
				return nil, err
			}
			r.name = fmt.Sprintf("%s, %s", cf.name, launchName(graphs))
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
