package main

import (
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/plan"
)

// writeSummary prints what a reader of the plan wants to know first: how
// far the arena is from the best possible, and from no sharing at all.
func writeSummary(w io.Writer, tr *plan.Trace, res *plan.Result, took time.Duration) error {
	// Tensors that share memory can add up past 2^64 B: the total is kept
	// exact, in 128 bits.
	unshared := new(big.Int)
	for _, t := range tr.Tensors {
		fp, err := t.Footprint()
		if err != nil {
			return err
		}
		unshared.Add(unshared, new(big.Int).SetUint64(fp))
	}
	unsharedF, _ := new(big.Float).SetInt(unshared).Float64()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", tr.Model)
	fmt.Fprintf(tw, "tensors\t%d over %d ops\n", len(tr.Tensors), tr.Ops)
	fmt.Fprintf(tw, "arena\t%s (%s bytes)\n", humanize.IBytes(res.ArenaBytes), commas(res.ArenaBytes))
	fmt.Fprintf(tw, "lower bound\t%s (%s bytes)\n", humanize.IBytes(res.LowerBound), commas(res.LowerBound))
	fmt.Fprintf(tw, "arena / lower bound\t%s\n", ratio(float64(res.ArenaBytes), res.LowerBound))
	fmt.Fprintf(tw, "no sharing\t%s (%s bytes, %s the lower bound)\n",
		humanize.BigIBytes(unshared), humanize.BigComma(unshared), ratio(unsharedF, res.LowerBound))
	if tr.TorchPeakAllocated > 0 {
		fmt.Fprintf(tw, "PyTorch peak allocated\t%s (%s the lower bound)\n",
			humanize.IBytes(tr.TorchPeakAllocated), ratio(float64(tr.TorchPeakAllocated), res.LowerBound))
	}
	fmt.Fprintf(tw, "time taken\t%s\n", took.Round(time.Microsecond))
	return tw.Flush()
}

// ratio formats a/b, or "n/a" for an empty plan.
func ratio(a float64, b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.4fx", a/float64(b))
}

// mul returns a*b and whether it fits in 64 bits: a wrapped product would
// plan a small arena for a huge tensor.
func mul(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

// commas writes a byte count in full with thousands separators.
func commas(n uint64) string { return humanize.BigComma(new(big.Int).SetUint64(n)) }
