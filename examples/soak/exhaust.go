package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// exhaust asks for more than the device has, and for more than an arena
// holds: each must fail with a clear error and leave nothing behind.
func exhaust(rt cudart.Full, c config, w io.Writer) error {
	fmt.Fprintln(w, "exhaustion")
	free0, total, err := freeMemory(rt)
	if err != nil {
		return err
	}
	ask := free0 + 1<<30
	fmt.Fprintf(w, "  device: %s free of %s; asking pool.New for a %s arena\n", humanize.IBytes(free0), humanize.IBytes(total), humanize.IBytes(ask))
	p, err := pool.New(rt, pool.WithDeviceBytes(ask), pool.WithHostBytes(0))
	if err == nil {
		return errors.Join(fmt.Errorf("pool.New reserved %s with %s free", humanize.IBytes(ask), humanize.IBytes(free0)), p.Close())
	}
	fmt.Fprintf(w, "  pool.New: %v\n", err)
	free1, _, ferr := freeMemory(rt)
	if ferr != nil {
		return ferr
	}
	if err := unchanged(w, free0, free1, c.freeTolerance); err != nil {
		return err
	}

	if c.growable {
		// Address space is not memory: the reservation succeeds and the
		// growth that would map more than is free fails.
		p, err := pool.New(rt, pool.WithGrowableDevice(ask), pool.WithHostBytes(0))
		if err != nil {
			return fmt.Errorf("reserve %s of address space: %w", humanize.IBytes(ask), err)
		}
		big := free1 + 512<<20
		if _, err := p.WantDevice(big, pool.Name("larger-than-free")); err != nil {
			return errors.Join(err, p.Close())
		}
		err = p.Satisfy()
		if err == nil {
			return errors.Join(fmt.Errorf("mapped %s with %s free", humanize.IBytes(big), humanize.IBytes(free1)), p.Close())
		}
		fmt.Fprintf(w, "  growable arena of %s, Satisfy of %s: %v\n", humanize.IBytes(ask), humanize.IBytes(big), err)
		if err := p.Close(); err != nil {
			return err
		}
		free2, _, err := freeMemory(rt)
		if err != nil {
			return err
		}
		if err := unchanged(w, free1, free2, c.freeTolerance); err != nil {
			return err
		}
	}

	const arena = 64 << 20
	p, err = pool.New(rt, pool.WithDeviceBytes(arena), pool.WithHostBytes(0))
	if err != nil {
		return err
	}
	for _, name := range []string{"weights", "kv-cache"} {
		if _, err := p.WantDevice(40<<20, pool.Name(name)); err != nil {
			return errors.Join(err, p.Close())
		}
	}
	err = p.Satisfy()
	var ex *pool.ExhaustedError
	if !errors.As(err, &ex) {
		return errors.Join(fmt.Errorf("queued 80 MiB in a 64 MiB arena: Satisfy returned %v, want a *pool.ExhaustedError", err), p.Close())
	}
	fmt.Fprintf(w, "  64 MiB arena, two 40 MiB requests queued, Satisfy: %v\n", err)
	if err := p.Close(); err != nil {
		return err
	}
	free3, _, err := freeMemory(rt)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	return unchanged(io.Discard, free0, free3, c.freeTolerance)
}
