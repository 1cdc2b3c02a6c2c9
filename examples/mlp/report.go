package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
)

// report prints the tables, the ratios, the launch-bound comparison, the
// graphs' nodes, the memory and the outputs' worst deviation.
func (s *session) report(out io.Writer, bw float64, launchBound []measured) {
	params := float64(s.m.paramBytes())
	if bw > 0 {
		fmt.Fprintf(out, "\ndevice-to-device copy bandwidth: %s/s (read + write; a cudaMemcpyAsync of %s between events, fastest of 5)\n", humanize.IBytes(uint64(bw)), mib(s.c.copyBytes))
	} else {
		fmt.Fprintln(out, "\ndevice-to-device copy bandwidth: not timed (the fake's events time no work)")
	}
	fmt.Fprintln(out, "params/s: requests/s x the parameters' bytes, which a request reads whatever its batch; vs copy: against the copy bandwidth")
	fmt.Fprintln(out, "outside pool: device memory cudaMemGetInfo saw taken from before to after the timed requests (negative: given back)")
	for _, graphs := range s.c.launches {
		for _, rows := range s.c.batches {
			fmt.Fprintf(out, "\n%s, batch %d, %d clients:\n", launchName(graphs), rows, s.c.clients)
			printTable(out, s.results[graphs][rows], params, bw)
		}
	}
	fmt.Fprintln(out, "\nratios, slots over cudaMallocAsync (requests/s over requests/s; target: at least 1.00x everywhere):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "launch\tbatch\t")
	for _, n := range s.c.slots {
		fmt.Fprintf(tw, "slots=%d\t", n)
	}
	fmt.Fprintf(tw, "%s\t\n", mutexName)
	for _, graphs := range s.c.launches {
		for _, rows := range s.c.batches {
			rs := s.results[graphs][rows]
			base := find(rs, asyncName)
			fmt.Fprintf(tw, "%s\t%d\t", launchName(graphs), rows)
			for _, n := range s.c.slots {
				fmt.Fprintf(tw, "%s\t", ratio(find(rs, fmt.Sprintf("slots=%d", n)), base))
			}
			fmt.Fprintf(tw, "%s\t\n", ratio(find(rs, mutexName), base))
		}
	}
	tw.Flush()
	rows := slices.Min(s.c.batches)
	most := fmt.Sprintf("slots=%d", slices.Max(s.c.slots))
	if bw > 0 && len(s.c.launches) > 0 {
		if r := find(s.results[s.c.launches[0]][rows], most); r != nil {
			fmt.Fprintf(out, "\nbandwidth bound, %s, batch %d, %s: %s/s of parameters, %.1f%% of the copy bandwidth (target: at least 70%% at 8 slots, batch 1)\n",
				most, rows, launchName(s.c.launches[0]), humanize.IBytes(uint64(r.perSecond*params)), 100*r.perSecond*params/bw)
		}
	}
	fmt.Fprintf(out, "\nlaunch-bound: 1 client, batch %d:\n", rows)
	printTable(out, launchBound, params, bw)
	graph, calls, async := find(launchBound, "slots=1, "+launchName(true)), find(launchBound, "slots=1, "+launchName(false)), find(launchBound, asyncName+", "+launchName(false))
	fmt.Fprintf(out, "  slot, one graph / slot, call by call: %s; slot, one graph / cudaMallocAsync, call by call: %s; slot, call by call / cudaMallocAsync, call by call: %s\n",
		ratio(graph, calls), ratio(graph, async), ratio(calls, async))
	if len(s.nodes) > 0 {
		fmt.Fprintln(out, "\nrequest graphs' nodes (per slot, profile or client; the most memory nodes of each configuration's):")
		for _, name := range s.order() {
			counts, ok := s.nodes[name]
			if !ok {
				continue
			}
			for _, rows := range s.c.batches {
				c := counts[rows]
				fmt.Fprintf(out, "  %-16s batch %-3d memory nodes %d  (%v)\n", name, rows, c.Memory(), c)
			}
		}
		fmt.Fprintln(out, "  (slots and mutex pool: the handle works in its workspace in the pool; cudaMallocAsync: the activations' and cuBLAS's own allocations)")
	}
	if len(s.setups) > 0 {
		fmt.Fprintln(out, "\ndevice memory each configuration's setup took beside its pool's arena (cudaMemGetInfo; the cuBLAS handles' fixed charge, and for cudaMallocAsync the parameters' cudaMalloc):")
		for _, st := range s.setups {
			fmt.Fprintf(out, "  %-16s %d handles: %s\n", st.name, st.handles, signedBytes(st.outside))
		}
	}
	fmt.Fprintf(out, "\noutputs against the CPU reference, outside the timed requests (tolerance %g relative or %g absolute): %v\n", relTol, absTol, &s.worst)
}

// order is the configurations' names in the order measured.
func (s *session) order() []string {
	var names []string
	for _, graphs := range s.c.launches {
		for _, r := range s.results[graphs][s.c.batches[0]] {
			if !slices.Contains(names, r.name) {
				names = append(names, r.name)
			}
		}
	}
	return names
}

// printTable prints one batch size's results in one launch mode.
func printTable(out io.Writer, rows []measured, params, bw float64) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\trequests/s\twait p50\twait p99\tservice p50\tservice p99\tparams/s\tvs copy\toutside pool\t")
	for i := range rows {
		r := &rows[i]
		wait50, wait99 := "-", "-"
		if r.wait.p99 > 0 {
			wait50, wait99 = round(r.wait.p50).String(), round(r.wait.p99).String()
		}
		vs := "-"
		if bw > 0 {
			vs = fmt.Sprintf("%.1f%%", 100*r.perSecond*params/bw)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%v\t%v\t%s/s\t%s\t%s\t\n", r.name, r.perSecond, wait50, wait99, round(r.service.p50), round(r.service.p99),
			humanize.IBytes(uint64(r.perSecond*params)), vs, signedBytes(r.outside))
	}
	tw.Flush()
}

// find is the result called name, or nil.
func find(rows []measured, name string) *measured {
	for i := range rows {
		if rows[i].name == name {
			return &rows[i]
		}
	}
	return nil
}

// ratio is r's requests/s over base's, or "-" where either is missing.
func ratio(r, base *measured) string {
	if r == nil || base == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r.perSecond/base.perSecond)
}

// mib formats a size in binary units.
func mib(n uint64) string { return humanize.IBytes(n) }

// signedBytes formats a difference of device memory: exact bytes, and in
// binary units past 1 KiB.
func signedBytes(n int64) string {
	sign, abs := "", uint64(n)
	if n < 0 {
		sign, abs = "-", uint64(-n)
	}
	if abs < 1024 {
		return fmt.Sprintf("%s%d B", sign, abs)
	}
	return strings.TrimSpace(fmt.Sprintf("%s%s (%s%d B)", sign, humanize.IBytes(abs), sign, abs))
}

// round keeps three significant digits or so of a latency.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}
