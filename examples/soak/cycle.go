package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// cycle runs the cycles and returns the samples.
func cycle(rt cudart.Full, c config, w, progress io.Writer) (samples []sample, err error) {
	opts := []pool.Option{pool.WithHostBytes(c.hostBytes)}
	kind := "fixed"
	switch {
	case c.growable && c.trim:
		opts, kind = append(opts, pool.WithGrowableDevice(c.deviceBytes), pool.WithTrimOnRelease()), "growable, trimmed at every ReleaseAll,"
	case c.growable:
		opts, kind = append(opts, pool.WithGrowableDevice(c.deviceBytes)), "growable"
	default:
		opts = append(opts, pool.WithDeviceBytes(c.deviceBytes))
	}
	p, err := pool.New(rt, opts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	reqs := requests(c.buffers)
	fmt.Fprintf(w, "cycles: %d x %d buffers on a %s %s device arena and a %s host arena (pinned: %s)\n",
		c.cycles, len(reqs), kind, humanize.IBytes(c.deviceBytes), humanize.IBytes(c.hostBytes), p.Stats().HostPinning)

	points := samplePoints(c.cycles, c.samples)
	bufs := make([]*pool.Buffer, len(reqs))
	var back []byte
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cycle\tfree device\tRSS\telapsed%s\t\n", c.note)
	start := time.Now()
	for i := 0; i < c.cycles; i++ {
		for j, q := range reqs {
			var opts []pool.WantOption
			if q.last > 0 {
				opts = append(opts, pool.Live(q.first, q.last))
			}
			want := p.WantDevice
			if q.host {
				want = p.WantHost
			}
			if bufs[j], err = want(q.size, opts...); err != nil {
				return nil, fmt.Errorf("cycle %d, request %d: %w", i, j, err)
			}
		}
		if err := p.Satisfy(); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if i%c.checkEvery == 0 {
			if back, err = roundTrip(rt, p, bufs[0], bufs[1], byte(i), back); err != nil {
				return nil, fmt.Errorf("cycle %d: %w", i, err)
			}
		}
		if err := p.ReleaseAll(); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if len(samples) < len(points) && i == points[len(samples)] {
			s, err := take(rt, i)
			if err != nil {
				return nil, err
			}
			samples = append(samples, s)
			elapsed := time.Since(start).Round(time.Millisecond)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\n", i, humanize.IBytes(s.free), rssString(s.rss), elapsed)
			fmt.Fprintf(progress, "soak: cycle %d of %d: %s device memory free, RSS %s, %s elapsed%s\n",
				i+1, c.cycles, humanize.IBytes(s.free), rssString(s.rss), elapsed, c.note)
		}
	}
	_ = tw.Flush()
	return samples, nil
}

// roundTrip writes a pattern into the host buffer, copies it to the device
// buffer and back into Go memory, and compares.
func roundTrip(rt cudart.Runtime, p *pool.Pool, host, dev *pool.Buffer, seed byte, back []byte) ([]byte, error) {
	hb, err := host.Bytes()
	if err != nil {
		return back, err
	}
	ptr, err := dev.Ptr()
	if err != nil {
		return back, err
	}
	n := min(uint64(len(hb)), dev.Size())
	for i := range hb[:n] {
		hb[i] = seed ^ byte(i*7)
	}
	if uint64(cap(back)) < n {
		back = make([]byte, n)
	}
	back = back[:n]
	if err := rt.Memcpy(p.Device(), cudart.DeviceMem(ptr, n), cudart.HostMem(hb[:n]), cudart.HostToDevice); err != nil {
		return back, err
	}
	if err := rt.Memcpy(p.Device(), cudart.HostMem(back), cudart.DeviceMem(ptr, n), cudart.DeviceToHost); err != nil {
		return back, err
	}
	if !bytes.Equal(back, hb[:n]) {
		return back, fmt.Errorf("%d bytes host -> device -> host came back different", n)
	}
	return back, nil
}

// request is one buffer of a cycle.
type request struct {
	host        bool
	size        uint64
	first, last int // a lifetime when last > 0
}

// requests returns n requests of mixed sizes, the same every run: a quarter
// host buffers of 256 B to 64 KiB, the rest device buffers of 256 B to
// 1 MiB, a third of those activations with lifetimes, each alive from the
// step that writes it to the one that reads it, as in a layer-by-layer
// pipeline. (Lifetimes drawn at random instead make the planner search for
// milliseconds at every Satisfy, which would make the soak a benchmark of
// the planner.)
func requests(n int) []request {
	r := rand.New(rand.NewPCG(6, 2026))
	out := make([]request, n)
	step := 0
	for i := range out {
		q := &out[i]
		switch {
		case i%4 == 0:
			q.host, q.size = true, 256+r.Uint64N(64<<10)
		default:
			q.size = 256 + r.Uint64N(1<<20)
			if i%3 == 0 {
				q.first, q.last = step, step+1
				step++
			}
		}
	}
	// The round trip needs one host and one whole device buffer.
	out[0].host = true
	out[1] = request{size: out[1].size}
	return out
}
