package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cudapool/cudapool/examples/loadgen"
)

// launchName is how the tables name a launch mode.
func launchName(graphs bool) string {
	if graphs {
		return "one CUDA graph a request"
	}
	return "kernel by kernel"
}

// tables measures every configuration in each launch mode, then prints a
// table for each mode, the ratios the serving targets are about, and the
// memory each configuration took when withMemory is set.
func tables(m *model, w *workload, c config, title string, through via, withMemory bool, stdout, stderr io.Writer) error {
	short := strings.SplitN(title, " (", 2)[0]
	results := map[bool][]loadgen.Result{}
	memory := map[string]string{}
	var names []string
	for _, graphs := range c.launches {
		for _, cf := range configurations(m, c, graphs) {
			fmt.Fprintf(stderr, "serve: %s, %s, %s: %d requests...\n", short, launchName(graphs), cf.name, c.requests)
			r, mem, err := measureOne(cf, m, w, c, through)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", cf.name, launchName(graphs), err)
			}
			results[graphs] = append(results[graphs], r)
			if _, ok := memory[cf.name]; !ok {
				memory[cf.name] = mem
				names = append(names, cf.name)
			}
		}
	}
	for _, graphs := range c.launches {
		fmt.Fprintf(stdout, "\n%s, %s:\n", title, launchName(graphs))
		if err := printTable(stdout, results[graphs]); err != nil {
			return err
		}
		if graphs {
			fmt.Fprintln(stdout, "(cudaMallocAsync: the allocations and frees are memory nodes of each client's graph)")
		}
	}
	fmt.Fprintf(stdout, "\nratios, %s (requests/s over requests/s, each in one launch mode):\n", short)
	if err := printRatios(stdout, c, results); err != nil {
		return err
	}
	if !withMemory {
		return nil
	}
	fmt.Fprintln(stdout, "\nmemory:")
	for _, name := range names {
		fmt.Fprintf(stdout, "  %-16s %s\n", name, memory[name])
	}
	return nil
}

// printTable prints one launch mode's results.
func printTable(out io.Writer, rows []loadgen.Result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\trequests/s\tvs per client\twait p50\twait p99\tservice p50\tservice p99\t")
	base := find(rows, perClientName)
	for i := range rows {
		r := &rows[i]
		wait50, wait99 := "-", "-"
		if r.Wait.P99 > 0 {
			wait50, wait99 = loadgen.Round(r.Wait.P50).String(), loadgen.Round(r.Wait.P99).String()
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%v\t%v\t\n", r.Name, r.PerSecond, loadgen.Ratio(r, base), wait50, wait99, loadgen.Round(r.Service.P50), loadgen.Round(r.Service.P99))
	}
	return tw.Flush()
}

// printRatios prints the ratios the targets are about, a column a launch
// mode.
func printRatios(out io.Writer, c config, results map[bool][]loadgen.Result) error {
	most, least := fmt.Sprintf("slots=%d", slices.Max(c.slots)), fmt.Sprintf("slots=%d", slices.Min(c.slots))
	lines := []struct {
		num, den, target string
	}{
		{most, perClientName, "at least 0.90x at 8 slots"},
		{least, mutexName, "at least 0.95x at 1 slot"},
		{most, asyncName, ""},
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  \t")
	for _, graphs := range c.launches {
		fmt.Fprintf(tw, "%s\t", launchName(graphs))
	}
	fmt.Fprintln(tw, "target")
	for _, l := range lines {
		fmt.Fprintf(tw, "  %s / %s\t", l.num, l.den)
		for _, graphs := range c.launches {
			fmt.Fprintf(tw, "%s\t", loadgen.Ratio(find(results[graphs], l.num), find(results[graphs], l.den)))
		}
		fmt.Fprintln(tw, l.target)
	}
	return tw.Flush()
}

// find is the result called name, or nil.
func find(rows []loadgen.Result, name string) *loadgen.Result {
	for i := range rows {
		if rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}
