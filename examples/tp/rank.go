package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/nccl"
)

// serveRank is one process of a job launched a process a GPU.
func serveRank(rt *choose.Runtime, c config, stdout, stderr io.Writer) error {
	world, err := envInt(c.env, "WORLD_SIZE", 1, 1<<20)
	if err != nil {
		return err
	}
	rank, err := envInt(c.env, "RANK", 0, world-1)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(c.env("MASTER_ADDR"), c.env("MASTER_PORT"))
	if c.env("MASTER_ADDR") == "" || c.env("MASTER_PORT") == "" {
		return fmt.Errorf("WORLD_SIZE is set: MASTER_ADDR and MASTER_PORT must be too (rank 0's address and port)")
	}
	count, err := rt.DeviceCount()
	if err != nil {
		return err
	}
	dev := rank % count
	if c.env("LOCAL_RANK") != "" {
		if dev, err = envInt(c.env, "LOCAL_RANK", 0, count-1); err != nil {
			return err
		}
	}
	s, err := newSession(rt, c, stdout, stderr)
	if err != nil {
		return err
	}
	s.rank = rank
	if c.corruptRank == rank {
		// In layer 3, which every rank holds whole: this rank's outputs
		// alone are wrong.
		s.p.Values[s.p.OffB[2]] += 0.5
	}
	fmt.Fprintln(stdout, layer3Note)
	fmt.Fprintf(stdout, "a process a GPU: %d ranks, rank 0 at %s; this is rank %d on device %d\n", world, addr, rank, dev)
	job := jobOf(c.seed, c.scale, c.batches, c.tpSlots, c.requests, c.launch, c.soak)
	var ids []nccl.UniqueID
	if rank == 0 {
		ln, err := listen(addr)
		if err != nil {
			return err
		}
		for range c.tpSlots {
			id, err := s.lib.UniqueID()
			if err != nil {
				return errors.Join(err, ln.Close())
			}
			ids = append(ids, id)
		}
		s.progress("waiting on %s for ranks 1 to %d (at most %v)...", ln.Addr(), world-1, c.rvTimeout)
		if err := serveRanks(ln, job, world, ids, c.rvTimeout, func(f string, a ...any) { s.progress("rendezvous: "+f, a...) }); err != nil {
			return err
		}
	} else {
		s.progress("joining rank 0 at %s (at most %v)...", addr, c.rvTimeout)
		if ids, err = joinRank(addr, hello{job: job, world: uint32(world), rank: uint32(rank)}, c.tpSlots, c.rvTimeout); err != nil {
			return err
		}
	}
	free0, err := s.free([]int{dev})
	if err != nil {
		return err
	}
	var comms [][]*nccl.Comm
	defer func() { err = errors.Join(err, destroyAll(comms)) }()
	for k, id := range ids {
		cm, err := s.lib.InitRank(dev, id, world, rank, c.commOptions()...)
		if err != nil {
			return fmt.Errorf("communicator %d: %w", k, err)
		}
		comms = append(comms, []*nccl.Comm{cm})
	}
	free1, err := s.free([]int{dev})
	if err != nil {
		return err
	}
	s.notes = append(s.notes, fmt.Sprintf("NCCL's communicators, rank %d: %d, %s, at init: %s on its GPU (cudaMemGetInfo, outside every pool)", rank, len(comms), commKind(comms), signedBytes(free0-free1)))
	if err := s.serveGroups([]int{dev}, nil, comms, c.tpSlots, true, c.soak > 0); err != nil {
		return err
	}
	s.report(stdout)
	fmt.Fprintf(stderr, "tp rank %d: done; outputs against the CPU reference: %v\n", rank, &s.worst)
	return nil
}

// envInt is the integer variable name, lo to hi.
func envInt(env func(string) string, name string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(env(name))
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s=%q: want an integer %d to %d", name, env(name), lo, hi)
	}
	return v, nil
}
