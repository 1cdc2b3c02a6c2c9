// Command plan plans the buffers of a recorded inference trace and reports
// how much memory the plan needs against the lower bound.
//
//	go run ./examples/plan -in plan/testdata/traces/resnet101.json
//	go run ./examples/plan -in trace.json -json
//	go run ./examples/plan -in trace.json -svg out.svg
//
// The trace format is that of plan.ReadTrace. The summary gives sizes in
// human form; -json prints {"arena_bytes", "lower_bound_bytes", "offsets"}
// with the offsets in the trace's order; -svg draws the plan, step against
// offset, one rectangle per buffer.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cudapool/cudapool/plan"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: a trace that cannot be planned, and a command line that
// cannot be understood.
const (
	exitFailure = 1
	exitUsage   = 2
)

// run is the command with its streams as arguments, so tests can run it.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "trace file to plan (JSON, see plan.ReadTrace); - for standard input")
	asJSON := fs.Bool("json", false, "print the plan as one JSON object instead of a summary")
	svgPath := fs.String("svg", "", "also draw the plan into this SVG file")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *in == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: plan -in trace.json [-json] [-svg out.svg]")
		fs.PrintDefaults()
		return exitUsage
	}
	if err := planTrace(*in, *asJSON, *svgPath, stdout); err != nil {
		fmt.Fprintln(stderr, "plan:", err)
		return exitFailure
	}
	return 0
}

func planTrace(path string, asJSON bool, svgPath string, stdout io.Writer) error {
	tr, err := readTrace(path)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := plan.Plan(tr.Tensors)
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if svgPath != "" {
		if err := writeSVG(svgPath, tr, res); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(stdout, res)
	}
	return writeSummary(stdout, tr, res, took)
}

func readTrace(path string) (*plan.Trace, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	tr, err := plan.ReadTrace(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// planJSON is the -json output.
type planJSON struct {
	ArenaBytes      uint64   `json:"arena_bytes"`
	LowerBoundBytes uint64   `json:"lower_bound_bytes"`
	Offsets         []uint64 `json:"offsets"`
}

func writeJSON(w io.Writer, res *plan.Result) error {
	err := json.NewEncoder(w).Encode(planJSON{
		ArenaBytes:      res.ArenaBytes,
		LowerBoundBytes: res.LowerBound,
		Offsets:         res.Offsets,
	})
	if err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
