package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/examples/loadgen"

	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// report prints the tables, the ratios, the launch-bound comparison, the
// graphs' nodes, the memory and the outputs' worst deviation.
func (s *session) report(out io.Writer, bw float64, launchBound []measured) {
	params := float64(s.m.Bytes())
	if bw > 0 {
		fmt.Fprintf(out, "\ndevice-to-device copy bandwidth: %s/s (read + write; a cudaMemcpyAsync of %s between events, fastest of 5)\n", humanize.IBytes(uint64(bw)), mib(s.c.copyBytes))
	} else {
		fmt.Fprintln(out, "\ndevice-to-device copy bandwidth: not timed (the fake's events time no work)")
	}
	fmt.Fprintln(out, "params/s: requests/s x the parameters' bytes, which a request reads whatever its batch; vs copy: against the copy bandwidth")
	fmt.Fprintln(out, "outside pool: device memory cudaMemGetInfo saw taken from before to after the timed requests (negative: given back), in the run that took the most either way")
	fmt.Fprintln(out, "runs: a configuration's timed runs; requests/s, wait and service are the median run's (by requests/s), range the lowest and highest requests/s")
	for _, graphs := range s.c.launches {
		for _, rows := range s.c.batches {
			fmt.Fprintf(out, "\n%s, batch %d:\n", launchName(graphs), rows)
			printTable(out, s.table(graphs, rows), params, bw)
		}
	}
	s.printPairs(out)
	s.printRatios(out)
	rows := slices.Min(s.c.batches)
	fmt.Fprintf(out, "\nlaunch-bound: 1 client, batch %d:\n", rows)
	printTable(out, launchBound, params, bw)
	graph, calls, async := find(launchBound, "slots=1, "+launchName(true)), find(launchBound, "slots=1, "+launchName(false)), find(launchBound, asyncOf(1)+", "+launchName(false))
	fmt.Fprintf(out, "  slot, one graph / slot, call by call: %s; slot, one graph / cudaMallocAsync, call by call: %s; slot, call by call / cudaMallocAsync, call by call: %s\n",
		loadgen.Ratio(graph, calls), loadgen.Ratio(graph, async), loadgen.Ratio(calls, async))
	width := 0
	for _, name := range s.order() {
		width = max(width, len(name))
	}
	if len(s.nodes) > 0 {
		fmt.Fprintln(out, "\nrequest graphs' nodes (per slot, profile or client; the most memory nodes of each configuration's):")
		for _, name := range s.order() {
			counts, ok := s.nodes[name]
			if !ok {
				continue
			}
			for _, rows := range s.c.batches {
				c := counts[rows]
				fmt.Fprintf(out, "  %-*s  batch %-3d memory nodes %d  (%v)\n", width, name, rows, c.Memory(), c)
			}
		}
		fmt.Fprintln(out, "  (slots and mutex pool: the handle works in its workspace in the pool; cudaMallocAsync: the activations' and cuBLAS's own allocations)")
	}
	if len(s.setups) > 0 {
		fmt.Fprintln(out, "\ndevice memory each configuration's setup took beside its pool's arena (cudaMemGetInfo: the cuBLAS handles' fixed charge, what the graphs' instantiation and first launch took, and for cudaMallocAsync the parameters' cudaMalloc):")
		for _, st := range s.setups {
			fmt.Fprintf(out, "  %-*s  cuBLAS handles %d: %s\n", width, st.name, st.handles, loadgen.SignedBytes(st.outside))
		}
	}
	fmt.Fprintf(out, "\noutputs against the CPU reference, outside the timed requests (tolerance %g relative or %g absolute): %v\n", mlpmodel.RelTol, mlpmodel.AbsTol, &s.worst)
	s.printTargets(out, bw, graph, async)
}

// printPairs prints each slot count's ratio over cudaMallocAsync with as
// many requests in flight, at every batch size, in each launch mode.
func (s *session) printPairs(out io.Writer) {
	fmt.Fprintf(out, "\nslots=N over cudaMallocAsync with as many requests in flight (N clients, at most %d), same launch mode: requests/s over requests/s of a run of each taken one after the other, %s; target at least 1.00x everywhere:\n",
		s.c.clients, s.pairsOf())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "launch\tbatch\t")
	for _, n := range s.c.slots {
		fmt.Fprintf(tw, "slots=%d / %s\t", n, clientsOf(min(n, s.c.clients)))
	}
	fmt.Fprintln(tw)
	for _, graphs := range s.c.launches {
		for _, rows := range s.c.batches {
			fmt.Fprintf(tw, "%s\t%d\t", launchName(graphs), rows)
			for i := range s.pairs[graphs][rows] {
				fmt.Fprintf(tw, "%v\t", &s.pairs[graphs][rows][i])
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
}

// pairsOf says how many runs of each a pair's ratio stands for.
func (s *session) pairsOf() string {
	if s.c.repeat == 1 {
		return "1 such pair"
	}
	return fmt.Sprintf("the median of %d such pairs [lowest-highest]", s.c.repeat)
}

// clientsOf says how many clients.
func clientsOf(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// printRatios prints, for reference, each slot count's and the mutex
// pool's requests/s over cudaMallocAsync's from -clients clients, at every
// batch size, for each pair of launch modes.
func (s *session) printRatios(out io.Writer) {
	fmt.Fprintf(out, "\nfor reference, over cudaMallocAsync with %s (requests/s over requests/s of the median runs; slots=N serve at most N requests at once, so below %d slots this is not the target's comparison):\n",
		clientsOf(s.c.clients), s.c.clients)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "launch\tcudaMallocAsync's launch\tbatch\t")
	for _, n := range s.c.slots {
		fmt.Fprintf(tw, "slots=%d\t", n)
	}
	fmt.Fprintf(tw, "%s\t\n", mutexName)
	for _, graphs := range s.c.launches {
		for _, baseGraphs := range s.c.launches {
			for _, rows := range s.c.batches {
				rs := s.table(graphs, rows)
				base := find(s.table(baseGraphs, rows), asyncOf(s.c.clients))
				fmt.Fprintf(tw, "%s\t%s\t%d\t", launchName(graphs), launchName(baseGraphs), rows)
				for _, n := range s.c.slots {
					fmt.Fprintf(tw, "%s\t", loadgen.Ratio(find(rs, fmt.Sprintf("slots=%d", n)), base))
				}
				fmt.Fprintf(tw, "%s\t\n", loadgen.Ratio(find(rs, mutexName), base))
			}
		}
	}
	tw.Flush()
}

// printTargets sums up the figures issue's targets are about.
func (s *session) printTargets(out io.Writer, bw float64, graph, async *loadgen.Result) {
	fmt.Fprintln(out, "\ntargets:")
	fmt.Fprintf(out, "  outputs within tolerance: %.3g of it at worst (at most 1)\n", s.worst.Ratio())
	most := 0
	for name, counts := range s.nodes {
		if strings.HasPrefix(name, asyncName) {
			continue
		}
		for _, c := range counts {
			most = max(most, c.Memory())
		}
	}
	if len(s.nodes) > 0 {
		fmt.Fprintf(out, "  memory nodes in the slots' and mutex pool's request graphs: %d at most (target 0)\n", most)
	}
	var outside int64
	var least *pairing
	leastAt := ""
	for _, graphs := range s.c.launches {
		for _, rows := range s.c.batches {
			for _, se := range s.results[graphs][rows] {
				if strings.HasPrefix(se.name, "slots=") {
					for _, r := range se.runs {
						outside = max(outside, abs(r.outside))
					}
				}
			}
			for i := range s.pairs[graphs][rows] {
				if p := &s.pairs[graphs][rows][i]; least == nil || p.median() < least.median() {
					least, leastAt = p, fmt.Sprintf("slots=%d against %s, %s, batch %d", p.slots, asyncOf(p.clients), launchName(graphs), rows)
				}
			}
		}
	}
	fmt.Fprintf(out, "  device memory outside the pool during %d timed requests after warm-up, slots: %s at most, either way, in any run (target 0 B)\n", s.c.requests, loadgen.SignedBytes(outside))
	if least != nil {
		fmt.Fprintf(out, "  slots=N over cudaMallocAsync with as many requests in flight, same launch mode (%s): %v at least, at %s (target at least 1.00x)\n", s.pairsOf(), least, leastAt)
	}
	rows, most8 := slices.Min(s.c.batches), fmt.Sprintf("slots=%d", slices.Max(s.c.slots))
	for _, graphs := range s.c.launches {
		if r := find(s.table(graphs, rows), most8); r != nil && bw > 0 {
			fmt.Fprintf(out, "  %s, batch %d, %s: parameters read at %.1f%% of the copy bandwidth (target at least 70%% at slots=8, batch 1)\n",
				most8, rows, launchName(graphs), 100*r.PerSecond*float64(s.m.Bytes())/bw)
		}
	}
	fmt.Fprintf(out, "  1 client, batch %d, a slot launching one graph over cudaMallocAsync launching call by call: %s (target above 1.00x)\n", rows, loadgen.Ratio(graph, async))
}

// order is the configurations' names in the order measured.
func (s *session) order() []string {
	var names []string
	for _, graphs := range s.c.launches {
		for _, se := range s.results[graphs][s.c.batches[0]] {
			if !slices.Contains(names, se.name) {
				names = append(names, se.name)
			}
		}
	}
	return names
}

// printTable prints one batch size's results in one launch mode.
func printTable(out io.Writer, rows []measured, params, bw float64) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\tclients\truns\trequests/s\trange\twait p50\twait p99\tservice p50\tservice p99\tparams/s\tvs copy\toutside pool\t")
	for i := range rows {
		r := &rows[i]
		runs, spread := 1, "-"
		if r.runs > 1 {
			runs, spread = r.runs, fmt.Sprintf("%.0f-%.0f", r.lo, r.hi)
		}
		wait50, wait99 := "-", "-"
		if r.Wait.P99 > 0 {
			wait50, wait99 = loadgen.Round(r.Wait.P50).String(), loadgen.Round(r.Wait.P99).String()
		}
		vs := "-"
		if bw > 0 {
			vs = fmt.Sprintf("%.1f%%", 100*r.PerSecond*params/bw)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%v\t%v\t%s/s\t%s\t%s\t\n", r.Name, r.clients, runs, r.PerSecond, spread, wait50, wait99, loadgen.Round(r.Service.P50), loadgen.Round(r.Service.P99),
			humanize.IBytes(uint64(r.PerSecond*params)), vs, loadgen.SignedBytes(r.outside))
	}
	tw.Flush()
}

// find is the result called name, or nil.
func find(rows []measured, name string) *loadgen.Result {
	for i := range rows {
		if rows[i].Name == name {
			return &rows[i].Result
		}
	}
	return nil
}

// mib formats a size in binary units.
func mib(n uint64) string { return humanize.IBytes(n) }
