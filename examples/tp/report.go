package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/examples/loadgen"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// report prints a table a batch size, the memory notes, the graphs' memory
// nodes and the outputs' worst deviation.
func (s *session) report(out io.Writer) {
	fmt.Fprintln(out, "\nwait: for a slot (replicas) or a group (tensor parallel); service: the rest of the latency; vs 1 GPU: requests/s over replicas on 1 GPU's")
	fmt.Fprintln(out, "outside pool: device memory cudaMemGetInfo saw taken, every GPU's summed, from before to after the timed requests (target 0 B)")
	var batches []int
	for _, r := range s.rows {
		if !slices.Contains(batches, r.rows) {
			batches = append(batches, r.rows)
		}
	}
	for _, rows := range batches {
		fmt.Fprintf(out, "\nbatch %d:\n", rows)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "configuration\trequests\trequests/s\tvs 1 GPU\twait p50\tservice p50\toutside pool\tmemory nodes\t")
		var base *loadgen.Result
		for _, r := range s.rows {
			if r.rows == rows && r.gpus == 1 && base == nil {
				base = &r.r
			}
		}
		for _, r := range s.rows {
			if r.rows != rows {
				continue
			}
			memNodes := 0
			for _, c := range r.nodes {
				memNodes += c.Memory()
			}
			nodes := fmt.Sprint(memNodes)
			if len(r.nodes) == 0 {
				nodes = "no graph"
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%v\t%v\t%s\t%s\t\n", r.name, r.r.Requests, r.r.PerSecond, loadgen.Ratio(&r.r, base),
				loadgen.Round(r.r.Wait.P50), loadgen.Round(r.r.Service.P50), signedBytes(r.outside), nodes)
		}
		tw.Flush()
	}
	if len(s.notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range s.notes {
			fmt.Fprintln(out, n)
		}
	}
	fmt.Fprintf(out, "\noutputs against the CPU reference, outside the timed requests (tolerance %g relative or %g absolute): %v\n", mlpmodel.RelTol, mlpmodel.AbsTol, &s.worst)
}

// mib formats n bytes in binary units.
func mib(n uint64) string { return humanize.IBytes(n) }

// signedBytes formats a difference of bytes, negative when given back.
func signedBytes(n int64) string {
	if n < 0 {
		return "-" + humanize.IBytes(uint64(-n))
	}
	return humanize.IBytes(uint64(n))
}
