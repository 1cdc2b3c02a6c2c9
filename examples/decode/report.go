package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/examples/loadgen"
)

// report prints each run, a table of them side by side, and the issue's
// targets against what was measured.
func report(out io.Writer, e *engine, results []*runResult, checks map[string]*checker, variants []variant) {
	for _, r := range results {
		fmt.Fprintf(out, "\n%s, %s: %d requests, %d tokens generated in %d steps, %v\n", r.variant, r.store, len(r.outputs), r.generated, r.steps, loadgen.Round(r.elapsed))
		fmt.Fprintf(out, "  KV utilization (bytes of tokens over the bytes taken for sequences: pages held, or reservations) by tenths of the run's steps: %s; average over the steps %.1f%%\n", tenths(r.util), 100*mean(r.util))
		fmt.Fprintf(out, "  KV arena taken for sequences, by tenths of the run's steps: %s; average %.1f%%\n", tenths(r.occupancy), 100*mean(r.occupancy))
		fmt.Fprintf(out, "  most sequences at once: %d\n", r.mostRunning)
		ttft, tpot, st := pct(r.ttft), pct(r.tpot), pct(r.stepT)
		fmt.Fprintf(out, "  output tokens/s: %.0f; time to first token p50 %v p99 %v; time per output token p50 %v p99 %v; step p50 %v p99 %v\n",
			float64(r.generated)/r.elapsed.Seconds(), ttft.P50, ttft.P99, tpot.P50, tpot.P99, st.P50, st.P99)
		fmt.Fprintf(out, "  prefix hits: %d prompt tokens (%d pages); preempted: %d swapped out (%d pages out, %d in), %d freed to be recomputed\n",
			r.hitTokens, r.hitTokens/pageTokens, r.preemptSwap, r.swapOuts, r.swapIns, r.preemptRecompute)
		if r.system > 0 {
			fmt.Fprintf(out, "  bytes holding tokens over the unshared tokens' plus one system prompt's: average %.3fx, most %.3fx\n", mean(r.sharedRatio), maxOf(r.sharedRatio))
		}
		fmt.Fprintf(out, "  device memory taken outside the pool during the run (drops of cudaMemGetInfo's free memory after each step, added up): %s\n", loadgen.SignedBytes(int64(r.taken)))
		if r.givenBack > 0 {
			fmt.Fprintf(out, "  device memory given back during the run: %s, not by this program, which frees none while it runs (cudaMemGetInfo counts the whole device: another process's, or memory its libraries took before the run)\n", loadgen.SignedBytes(int64(r.givenBack)))
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tKV\tsteps\ttokens/s\tutilization\tmost at once\tTPOT p50\tTPOT p99\tprefix hits\tpages swapped out\toutside pool\t")
	for _, r := range results {
		tpot := pct(r.tpot)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f%%\t%d\t%v\t%v\t%d\t%d\t%s\t\n", r.variant, r.store, r.steps, float64(r.generated)/r.elapsed.Seconds(),
			100*mean(r.util), r.mostRunning, tpot.P50, tpot.P99, r.hitTokens, r.swapOuts, loadgen.SignedBytes(int64(r.taken)))
	}
	tw.Flush()
	fmt.Fprintln(out, "\ntargets (the issue's, on a GPU):")
	for i := 0; i+1 < len(results); i += 2 {
		p, b := results[i], results[i+1]
		fmt.Fprintf(out, "  %s: utilization %.1f%% (target at least 95%%), baseline %.1f%%; most at once %.2fx the baseline's (target 2.5x); tokens/s %.2fx (target 2x); the baseline generated the same tokens for %d of %d requests\n",
			p.variant, 100*mean(p.util), 100*mean(b.util), float64(p.mostRunning)/float64(b.mostRunning),
			(float64(p.generated)/p.elapsed.Seconds())/(float64(b.generated)/b.elapsed.Seconds()), sameOutputs(p, b), len(p.outputs))
		if p.system > 0 {
			fmt.Fprintf(out, "  %s: bytes holding tokens at most %.3fx the unshared tokens' plus one system prompt's (target 1.1x)\n", p.variant, maxOf(p.sharedRatio))
		}
	}
	for _, va := range variants {
		fmt.Fprintf(out, "\nchecked against the CPU, %s (tolerance %g relative or %g absolute): %v\n", va.name, relTol, absTol, checks[va.name])
	}
}

// tenths is the mean of each tenth of v, as percentages.
func tenths(v []float64) string {
	var parts []string
	for i := range 10 {
		lo, hi := i*len(v)/10, (i+1)*len(v)/10
		if hi <= lo {
			continue
		}
		parts = append(parts, fmt.Sprintf("%.0f%%", 100*mean(v[lo:hi])))
	}
	return strings.Join(parts, " ")
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func maxOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

func pct(d []time.Duration) loadgen.Percentiles {
	if len(d) == 0 {
		return loadgen.Percentiles{}
	}
	p := loadgen.PercentilesOf(slices.Clone(d))
	return loadgen.Percentiles{P50: loadgen.Round(p.P50), P99: loadgen.Round(p.P99)}
}

func mib(n uint64) string { return humanize.IBytes(n) }
