package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/vmem"
)

// reach is how far a probe grew a buffer in fixed steps, and why it stopped.
type reach struct {
	reached uint64
	free    uint64 // free when the probe started
	steps   int
	why     string
}

// prober decides, before each step, whether the next size may be asked for:
// never past the -probe limit, never more than is free (less the margin).
type prober struct {
	rt     *counting
	limit  uint64
	free   uint64
	margin uint64
}

func newProber(rt *counting, c config) (*prober, error) {
	free, _, err := rt.MemGetInfo(0)
	if err != nil {
		return nil, err
	}
	limit := c.probe
	if limit == 0 {
		limit = free
	}
	return &prober{rt: rt, limit: limit, free: free, margin: c.margin}, nil
}

// refuse says why asking for need more bytes, for a buffer of next bytes,
// must not be done; "" when it may.
func (p *prober) refuse(next, need uint64) (string, error) {
	if next > p.limit {
		return fmt.Sprintf("reached -probe %s", humanize.IBytes(p.limit)), nil
	}
	free, _, err := p.rt.MemGetInfo(0)
	if err != nil {
		return "", err
	}
	if need+p.margin > free {
		return fmt.Sprintf("next step needs %s + %s margin, %s free", humanize.IBytes(need), humanize.IBytes(p.margin), humanize.IBytes(free)), nil
	}
	return "", nil
}

// reallocReach grows a cudaMalloc buffer step by step, as realloc does,
// until the next step would need more than is free, or -probe or
// -realloc-budget is reached.
func reallocReach(rt *counting, c config) (reach, error) {
	pr, err := newProber(rt, c)
	if err != nil {
		return reach{}, err
	}
	r := reach{free: pr.free}
	if r.why, err = pr.refuse(c.step, c.step); err != nil || r.why != "" {
		return r, err
	}
	p, err := rt.Malloc(0, c.step)
	if err != nil {
		r.why = firstLine(err)
		return r, nil
	}
	r.reached, r.steps = c.step, 1
	start := time.Now()
	for {
		next := r.reached + c.step
		if r.why, err = pr.refuse(next, next); err != nil || r.why != "" {
			break
		}
		if time.Since(start) > c.budget {
			r.why = fmt.Sprintf("-realloc-budget %s spent", c.budget)
			break
		}
		q, serr := reallocStep(rt, p, r.reached, next)
		if serr != nil {
			r.why = firstLine(serr)
			break
		}
		p, r.reached = q, next
		r.steps++
	}
	return r, errors.Join(err, rt.Free(0, p))
}

// vmemReach grows a vmem.Vector step by step until the next step would need
// more than is free, or -probe is reached.
func vmemReach(rt *counting, c config) (reach, error) {
	pr, err := newProber(rt, c)
	if err != nil {
		return reach{}, err
	}
	r := reach{free: pr.free}
	v, err := vmem.NewVector(rt, 0)
	if err != nil {
		return r, err
	}
	for {
		next := r.reached + c.step
		if r.why, err = pr.refuse(next, c.step); err != nil || r.why != "" {
			break
		}
		if gerr := v.Grow(next); gerr != nil {
			r.why = firstLine(gerr)
			break
		}
		r.reached = v.Size()
		r.steps++
	}
	return r, errors.Join(err, v.Close())
}

// firstLine is the first line of err's message: a CUDA failure is a reason
// the probe stopped, not a failure of the program.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
