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
		fmt.Fprintf(out, "  most sequences at once: %d (first at step %d; what bounded admission then: %s); steps by what bounded admission: %s\n",
			r.mostRunning, r.mostAt, r.mostBound.String(r.store), r.boundsString())
		ttft, tpot, st := pct(r.ttft), pct(r.tpot), pct(r.stepT)
		fmt.Fprintf(out, "  output tokens/s: %.0f; time to first token p50 %v p99 %v; time per output token p50 %v p99 %v; step p50 %v p99 %v\n",
			float64(r.generated)/r.elapsed.Seconds(), ttft.P50, ttft.P99, tpot.P50, tpot.P99, st.P50, st.P99)
		pb := e.cache.PageBytes()
		fmt.Fprintf(out, "  prefix hits: %d prompt tokens (%d pages); preempted: %d swapped out to the pinned arena (%d pages, %s), %d swapped back in (%d pages copied, %s; %d found on the device), %d freed to be recomputed\n",
			r.hitTokens, r.hitTokens/pageTokens, r.preemptSwap, r.swapOuts, mib(r.swapOuts*pb), r.resumed, r.swapIns, mib(r.swapIns*pb), r.swapHits, r.preemptRecompute)
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
		longest := 0
		for _, va := range variants {
			if va.name == p.variant {
				for _, r := range va.reqs {
					longest = max(longest, r.outLen)
				}
			}
		}
		fmt.Fprintf(out, "  %s: utilization %.1f%% (target at least 95%%), baseline %.1f%%; the baseline generated the same tokens for %d of %d requests\n",
			p.variant, 100*mean(p.util), 100*mean(b.util), sameOutputs(p, b), len(p.outputs))
		fmt.Fprintf(out, "  %s: most at once %.2fx the baseline's (target 2.5x): %d, bounded by %s, against %d, bounded by %s\n",
			p.variant, float64(p.mostRunning)/float64(b.mostRunning), p.mostRunning, p.mostBound.String(p.store), b.mostRunning, b.mostBound.String(b.store))
		if p.mostBound == boundNone {
			fmt.Fprintf(out, "  %s: all %d requests ran at once: the load, not the KV memory, bounded the paged run; a heavier load (-requests) shows what the memory holds\n", p.variant, len(p.outputs))
		}
		// Both runs generate the same tokens: tokens/s go as the inverse
		// of the run's time, its steps times its time a step.
		ps, bs := p.elapsed/time.Duration(p.steps), b.elapsed/time.Duration(b.steps)
		fmt.Fprintf(out, "  %s: tokens/s %.2fx the baseline's (target 2x) = %.2fx fewer steps (%d against %d; a run takes at least %d, the longest output) × %.2fx the baseline's steps a second (a step %v against %v)\n",
			p.variant, b.elapsed.Seconds()/p.elapsed.Seconds(), float64(b.steps)/float64(p.steps), p.steps, b.steps, longest,
			float64(bs)/float64(ps), loadgen.Round(ps), loadgen.Round(bs))
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

// boundsString counts the steps by what stopped admission, those that
// happened.
func (r *runResult) boundsString() string {
	var parts []string
	for b := range numBounds {
		if n := r.bounds[b]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", b.String(r.store), n))
		}
	}
	return strings.Join(parts, ", ")
}
