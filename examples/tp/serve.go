package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/loadgen"
	"github.com/cudapool/cudapool/examples/mlpmodel"
	"github.com/cudapool/cudapool/nccl"
)

// session is one run's shared state.
type session struct {
	rt     *choose.Runtime
	c      config
	blas   *cublas.Library
	lib    *nccl.Library
	p      *mlpmodel.Params
	loads  map[int]*mlpmodel.Workload
	worst  mlpmodel.Worst
	stderr io.Writer
	rank   int // this process's rank; 0 in one process
	rows   []row
	notes  []string // memory and setup lines, in order
	dumped []mlpmodel.Batch
}

// row is one measured configuration at one batch size.
type row struct {
	name    string
	gpus    int
	rows    int
	r       loadgen.Result
	outside int64 // device bytes taken during the timed requests, outside any pool
	nodes   []cudart.GraphNodeCounts
}

func (s *session) progress(format string, args ...any) {
	prefix := "tp: "
	if s.c.env("WORLD_SIZE") != "" {
		prefix = fmt.Sprintf("tp rank %d: ", s.rank)
	}
	fmt.Fprintf(s.stderr, prefix+format+"\n", args...)
}

func newSession(rt *choose.Runtime, c config, stdout, stderr io.Writer) (*session, error) {
	s := &session{rt: rt, c: c, stderr: stderr, loads: map[int]*mlpmodel.Workload{}}
	var err error
	if s.blas, err = cublas.Open(rt); err != nil {
		return nil, err
	}
	if s.lib, err = nccl.Open(rt); err != nil {
		return nil, err
	}
	v, err := s.lib.Version()
	if err != nil {
		return nil, err
	}
	s.p = mlpmodel.New(mlpmodel.Scaled(c.scale), c.seed)
	mlpmodel.RegisterKernel(rt)
	d := s.p.Dims
	fmt.Fprintf(stdout, "NCCL %s (%s); model %d -> %d -> %d -> %d, FP32, parameters %s (%d B) from seed %d; batches %v\n",
		v, s.lib.Path(), d[0], d[1], d[2], d[3], mib(s.p.Bytes()), s.p.Bytes(), c.seed, c.batches)
	fmt.Fprintln(stdout, transport(c.env))
	s.progress("computing the CPU reference...")
	for _, rows := range c.batches {
		s.loads[rows] = mlpmodel.NewWorkload(s.p, c.seed, rows)
	}
	return s, nil
}

// free is the free memory of devices, summed.
func (s *session) free(devices []int) (int64, error) {
	var n int64
	for _, d := range devices {
		f, _, err := s.rt.MemGetInfo(d)
		if err != nil {
			return 0, err
		}
		n += int64(f)
	}
	return n, nil
}

func serveAll(rt *choose.Runtime, c config, stdout, stderr io.Writer) error {
	start := time.Now()
	if c.env("WORLD_SIZE") != "" {
		return serveRank(rt, c, stdout, stderr)
	}
	s, err := newSession(rt, c, stdout, stderr)
	if err != nil {
		return err
	}
	count, err := rt.DeviceCount()
	if err != nil {
		return err
	}
	if c.corruptRank >= 0 {
		// After the reference: the devices get a parameter the CPU did
		// not use.
		s.p.Values[s.p.OffB[2]] += 0.5
	}
	fmt.Fprintln(stdout, layer3Note)
	most := 0
	for _, n := range c.gpus {
		if n > count {
			fmt.Fprintf(stdout, "%d GPUs: skipped, %d visible\n", n, count)
			continue
		}
		most = max(most, n)
		devices := make([]int, n)
		for i := range devices {
			devices[i] = i
		}
		if c.replicas {
			if err := s.serveReplicas(devices); err != nil {
				return fmt.Errorf("replicas on %d GPUs: %w", n, err)
			}
		}
		if c.tp && n > 1 {
			if err := s.serveTP(devices, c.soak > 0 && n == maxFitting(c.gpus, count)); err != nil {
				return fmt.Errorf("tensor parallel on %d GPUs: %w", n, err)
			}
		}
	}
	s.report(stdout)
	if c.dump != "" {
		if len(s.dumped) == 0 {
			return fmt.Errorf("-dump: no tensor-parallel run to dump (2 GPUs or more, -modes tp)")
		}
		if err := mlpmodel.Dump(c.dump, s.p, c.seed, s.dumped); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ndumped to %s: manifest.json and its files (the outputs of tensor parallel on %d GPUs)\n", c.dump, most)
	}
	fmt.Fprintf(stdout, "\nthe run took %v\n", loadgen.Round(time.Since(start)))
	return nil
}

// maxFitting is the most GPUs of gpus that count devices hold.
func maxFitting(gpus []int, count int) int {
	most := 0
	for _, n := range gpus {
		if n <= count {
			most = max(most, n)
		}
	}
	return most
}

// layer3Note says where layer 3 runs, and why.
const layer3Note = "tensor parallel: layer 1 split by its outputs, layer 2 by its inputs, one all-reduce (sum) of layer 2's partial products; layer 3 whole on every GPU: split, it would need a second collective a request (an all-gather) costing more than the 1/6 of the weights it saves reading, and whole, every rank holds the output"

// shardsOn makes rank i of len(devices)'s shard on each device (size 1: a
// replica each).
func (s *session) shardsOn(devices []int, size int) (map[int]*shard, func() error, error) {
	shards := map[int]*shard{}
	closeAll := func() error {
		var errs []error
		for _, sh := range shards {
			errs = append(errs, sh.close())
		}
		return errors.Join(errs...)
	}
	for i, d := range devices {
		rank := i
		if size == 1 {
			rank = 0
		}
		sh, err := newShard(s.rt, d, s.p, rank, size)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		shards[d] = sh
	}
	return shards, closeAll, nil
}

func (s *session) serveReplicas(devices []int) (err error) {
	shards, closeAll, err := s.shardsOn(devices, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	clients := s.clientsFor(s.c.slots * len(devices))
	name := fmt.Sprintf("replicas, %s, %d slots a GPU, %d clients", gpusOf(len(devices)), s.c.slots, clients)
	for _, rows := range s.c.batches {
		if err := s.measure(name, len(devices), rows, clients, func() (*backend, error) {
			return newBackend(name, shards, devices, s.c.slots, rows, s.blas, s.lib, nil, launchGraph, false, s.c.timeout, nil)
		}, nil); err != nil {
			return err
		}
	}
	return nil
}

// serveTP serves tensor parallel on devices from one process: -tp-slots
// sets of communicators, made at once (InitAll) each.
func (s *session) serveTP(devices []int, soak bool) (err error) {
	free0, err := s.free(devices)
	if err != nil {
		return err
	}
	var comms [][]*nccl.Comm
	defer func() { err = errors.Join(err, destroyAll(comms)) }()
	for range s.c.tpSlots {
		cs, err := s.lib.InitAll(devices, s.c.commOptions()...)
		if err != nil {
			return err
		}
		comms = append(comms, cs)
	}
	free1, err := s.free(devices)
	if err != nil {
		return err
	}
	s.notes = append(s.notes, fmt.Sprintf("NCCL's communicators, %s: %d sets of %d, %s, at init: %s in all, %s a GPU (cudaMemGetInfo, outside every pool)",
		gpusOf(len(devices)), s.c.tpSlots, len(devices), commKind(comms), signedBytes(free0-free1), signedBytes((free0-free1)/int64(len(devices)))))
	return s.serveGroups(devices, devices, comms, s.clientsFor(s.c.tpSlots), false, soak)
}

// clientsFor is -clients, or where it is 0 one client a slot: a closed
// loop of fewer clients than slots leaves slots idle, and then measures
// the clients, not the GPUs (8 clients over 4 GPUs of 8 slots kept at most
// a quarter of the slots busy).
func (s *session) clientsFor(slots int) int {
	if s.c.clients > 0 {
		return s.c.clients
	}
	return slots
}

// serveGroups measures tensor parallel at every batch size on this
// process's devices (every GPU, or its rank's), with comms.
func (s *session) serveGroups(devices, all []int, comms [][]*nccl.Comm, clients int, pinned, soak bool) (err error) {
	world := len(all)
	if pinned {
		world = comms[0][0].Size()
	}
	shards := map[int]*shard{}
	defer func() {
		for _, sh := range shards {
			err = errors.Join(err, sh.close())
		}
	}()
	for i, d := range devices {
		rank := comms[0][i].Rank()
		if shards[d], err = newShard(s.rt, d, s.p, rank, world); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("tensor parallel, %s, %d groups, %s", gpusOf(world), s.c.tpSlots, s.c.launch)
	mk := func(rows int) func() (*backend, error) {
		return func() (*backend, error) {
			return newBackend(name, shards, devices, s.c.tpSlots, rows, s.blas, s.lib, comms, s.c.launch, pinned, s.c.timeout, s.c.aborted)
		}
	}
	for _, rows := range s.c.batches {
		dump := func(b *backend) error { return s.dumpOne(b, rows) }
		if s.c.dump == "" {
			dump = nil
		}
		if err := s.measure(name, world, rows, clients, mk(rows), dump); err != nil {
			return err
		}
	}
	if soak {
		rows := slices.Min(s.c.batches)
		b, err := mk(rows)()
		if err != nil {
			return err
		}
		s.progress("soak: %d tensor-parallel requests on %s, batch %d...", s.c.soak, gpusOf(world), rows)
		per := (s.c.soak + clients - 1) / clients
		r, err := loadgen.RunFixed(clients, per, s.requests(b, s.loads[rows], nil))
		err = errors.Join(err, b.close())
		if err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		s.notes = append(s.notes, fmt.Sprintf("soak: %d tensor-parallel requests on %s at batch %d ended in %v: %.0f requests/s, service p50 %v, no hang",
			r.Requests, gpusOf(world), rows, loadgen.Round(r.Elapsed), r.PerSecond, loadgen.Round(r.Service.P50)))
	}
	return nil
}

// dumpOne keeps the first input of rows and the output b computes for it.
func (s *session) dumpOne(b *backend, rows int) error {
	w := s.loads[rows]
	x := &mlpmodel.Request{In: w.Inputs[0], Want: w.Want[0], Full: &s.worst, Keep: true}
	if _, err := b.serve(context.Background(), 0, x); err != nil {
		return fmt.Errorf("-dump, batch %d: %w", rows, err)
	}
	s.dumped = append(s.dumped, mlpmodel.Batch{Rows: rows, Input: floats.Of(w.Inputs[0]), Output: x.Got})
	return nil
}

func destroyAll(comms [][]*nccl.Comm) error {
	var errs []error
	for _, cs := range comms {
		for _, c := range cs {
			errs = append(errs, c.Destroy())
		}
	}
	return errors.Join(errs...)
}

// requests is each client's request j: input variant j of the batch's,
// the same on every rank.
func (s *session) requests(b *backend, w *mlpmodel.Workload, full *mlpmodel.Worst) func(c, j int) (time.Duration, error) {
	return func(c, j int) (time.Duration, error) {
		x := w.Request(j, full)
		return b.serve(context.Background(), c, &x)
	}
}

// measure sets a backend up, checks every input variant from every
// client, times -requests requests between two readings of the devices'
// free memory, and checks again.
func (s *session) measure(name string, gpus, rows, clients int, make func() (*backend, error), dump func(*backend) error) (err error) {
	s.progress("%s, batch %d: setting up...", name, rows)
	b, err := make()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	devices := b.devices()
	w := s.loads[rows]
	if _, err := loadgen.RunFixed(clients, mlpmodel.Variants, s.requests(b, w, &s.worst)); err != nil {
		return fmt.Errorf("batch %d, check before: %w", rows, err)
	}
	if dump != nil {
		if err := dump(b); err != nil {
			return err
		}
	}
	before, err := s.free(devices)
	if err != nil {
		return err
	}
	s.progress("%s, batch %d: %d requests...", name, rows, s.c.requests)
	per := (s.c.requests + clients - 1) / clients
	r, err := loadgen.RunFixed(clients, per, s.requests(b, w, nil))
	if err != nil {
		return fmt.Errorf("batch %d: %w", rows, err)
	}
	after, err := s.free(devices)
	if err != nil {
		return err
	}
	if _, err := loadgen.RunFixed(clients, mlpmodel.Variants, s.requests(b, w, &s.worst)); err != nil {
		return fmt.Errorf("batch %d, check after: %w", rows, err)
	}
	s.rows = append(s.rows, row{name: name, gpus: gpus, rows: rows, r: r, outside: before - after, nodes: b.nodes})
	return nil
}

func gpusOf(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
