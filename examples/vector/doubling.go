package main

import (
	"errors"
	"time"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/vmem"
)

// growth is one timed doubling: how long, how many CUDA calls, and how many
// times the buffer moved to another address range.
type growth struct {
	time  time.Duration
	calls int64
	moves int64
}

// reallocDoubling grows a cudaMalloc buffer from from to to by doubling, as
// realloc does: allocate the new size, copy the old contents, free the old.
// The timed part ends when the device is idle; the last free is not timed.
func reallocDoubling(rt *counting, from, to uint64) (growth, error) {
	rt.reset()
	start := time.Now()
	p, err := rt.Malloc(0, from)
	if err != nil {
		return growth{}, err
	}
	for n := from * 2; n <= to; n *= 2 {
		q, err := reallocStep(rt, p, n/2, n)
		if err != nil {
			return growth{}, errors.Join(err, rt.Free(0, p))
		}
		p = q
	}
	if err := rt.DeviceSynchronize(0); err != nil {
		return growth{}, errors.Join(err, rt.Free(0, p))
	}
	g := growth{time: time.Since(start)}
	g.calls, _ = rt.reset()
	return g, rt.Free(0, p)
}

// reallocStep moves the have bytes at p into a new buffer of want bytes and
// frees p; on failure p is still allocated.
func reallocStep(rt *counting, p cudart.DevicePtr, have, want uint64) (cudart.DevicePtr, error) {
	q, err := rt.Malloc(0, want)
	if err != nil {
		return 0, err
	}
	if err := rt.Memcpy(0, cudart.DeviceMem(q, have), cudart.DeviceMem(p, have), cudart.DeviceToDevice); err != nil {
		return 0, errors.Join(err, rt.Free(0, q))
	}
	if err := rt.Free(0, p); err != nil {
		return 0, errors.Join(err, rt.Free(0, q))
	}
	return q, nil
}

// vmemDoubling grows a vmem.Vector from from to to by doubling. Creating the
// vector (one granularity query) and closing it are not timed.
func vmemDoubling(rt *counting, from, to uint64) (growth, error) {
	v, err := vmem.NewVector(rt, 0)
	if err != nil {
		return growth{}, err
	}
	rt.reset()
	start := time.Now()
	for n := from; n <= to; n *= 2 {
		if err := v.Grow(n); err != nil {
			return growth{}, errors.Join(err, v.Close())
		}
	}
	if err := rt.DeviceSynchronize(0); err != nil {
		return growth{}, errors.Join(err, v.Close())
	}
	g := growth{time: time.Since(start)}
	g.calls, g.moves = rt.reset()
	return g, v.Close()
}
