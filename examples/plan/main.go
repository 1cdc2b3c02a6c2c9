// Command plan plans the buffers of a recorded inference trace, or of a
// problem in MiniMalloc's CSV format, and reports how much memory the plan
// needs against the lower bound.
//
//	go run ./examples/plan
//	go run ./examples/plan -in plan/testdata/traces/resnet101.json
//	go run ./examples/plan -in plan/testdata/traces/alexnet.json -json
//	go run ./examples/plan -in plan/testdata/traces/alexnet.json -svg out.svg
//	go run ./examples/plan -in plan/testdata/minimalloc/A.1048576.csv -unit 256 -capacity 1048576 -json
//
// With no -in it plans a small trace embedded in the program (alexnet, a
// copy of plan/testdata/traces/alexnet.json, so that the example runs when
// copied alone into a module), and says so on stderr.
//
// The input's format follows its extension: .csv is read by plan.ReadCSV,
// anything else by plan.ReadTrace. -unit multiplies every size, and the
// capacity, so that a problem stated in units (MiniMalloc's are) maps onto
// the pool's 256-byte alignment with -unit 256. -capacity asks for a layout
// within that many bytes (times the unit), searched for up to -time-limit.
//
// The summary gives sizes in human form; -json prints one object,
// {"arena_bytes", "lower_bound", "fits" (with -capacity), "offsets"}, the
// offsets in bytes in the input's order; -svg draws the plan, step against
// offset, one rectangle per buffer. Every layout is validated before it is
// printed.
//
// Exit status: 0 when a layout is printed (and fits, with -capacity), 1 on
// bad input, 2 on a bad command line, 3 when no layout within the capacity
// was found (the best one found is still printed).
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudapool/cudapool/plan"

	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

// Exit codes besides 0.
const (
	// exitFailure: an input that cannot be read or planned.
	exitFailure = 1
	// exitUsage: a command line that cannot be understood.
	exitUsage = 2
	// exitNoFit: no layout within -capacity was found.
	exitNoFit = 3
)

// options are the command line's settings.
type options struct {
	in, svg  string
	asJSON   bool
	unit     uint64
	capacity uint64
	limit    time.Duration
}

// run is the command with its streams as arguments, so tests can run it.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("plan", about, stderr)
	var o options
	cmd.StringVar(&o.in, "in", "", "input to plan: a trace (JSON, see plan.ReadTrace) or a CSV (see plan.ReadCSV); - for standard input (JSON); none for the embedded "+embeddedName)
	cmd.BoolVar(&o.asJSON, "json", false, "print the plan as one JSON object instead of a summary")
	cmd.StringVar(&o.svg, "svg", "", "also draw the plan into this SVG file")
	cmd.Uint64Var(&o.unit, "unit", 1, "multiply every size and the capacity by this many bytes")
	cmd.Uint64Var(&o.capacity, "capacity", 0, "find a layout within this many bytes (times -unit); 0 for none")
	cmd.DurationVar(&o.limit, "time-limit", 0, "bound the exact search (default: plan's own defaults)")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	if cmd.NArg() > 0 || o.unit == 0 || o.limit < 0 {
		fmt.Fprintln(stderr, "usage: plan [-in trace.json|problem.csv] [-unit N] [-capacity BYTES] [-time-limit D] [-json] [-svg out.svg]")
		cmd.PrintDefaults()
		return exitUsage
	}
	if o.in == "" {
		fmt.Fprintf(stderr, "plan: no -in given: planning the embedded %s (-in plans your own trace or CSV)\n", embeddedName)
	}
	if err := planInput(o, stdout); err != nil {
		fmt.Fprintln(stderr, "plan:", err)
		if errors.Is(err, plan.ErrNoFit) {
			return exitNoFit
		}
		return exitFailure
	}
	return 0
}

// planInput plans the input and prints the plan. It returns an error
// wrapping plan.ErrNoFit, after printing the best layout, when none fits
// the capacity.
func planInput(o options, stdout io.Writer) error {
	name := o.in
	if name == "" {
		name = embeddedName
	}
	tr, err := readInput(o.in, o.unit)
	if err != nil {
		return err
	}
	var opts []plan.Option
	if o.capacity > 0 {
		capacity, ok := mul(o.capacity, o.unit)
		if !ok {
			return fmt.Errorf("capacity %d times unit %d overflows 64 bits", o.capacity, o.unit)
		}
		opts = append(opts, plan.WithCapacity(capacity))
	}
	if o.limit > 0 {
		opts = append(opts, plan.WithTimeLimit(o.limit))
	}
	start := time.Now()
	res, planErr := plan.Plan(tr.Tensors, opts...)
	took := time.Since(start)
	if res == nil {
		return fmt.Errorf("%s: %w", name, planErr)
	}
	if err := plan.Validate(tr.Tensors, res.Offsets); err != nil {
		return fmt.Errorf("%s: the plan is invalid: %w", name, err)
	}
	if o.svg != "" {
		if err := writeSVG(o.svg, tr, res); err != nil {
			return err
		}
	}
	if o.asJSON {
		err = writeJSON(stdout, res, o.capacity > 0, planErr == nil)
	} else {
		err = writeSummary(stdout, tr, res, took)
	}
	if err != nil {
		return err
	}
	if planErr != nil {
		return fmt.Errorf("%s: %w", name, planErr)
	}
	return nil
}

// embeddedName names the trace planned when no -in is given.
const embeddedName = "alexnet.json (embedded)"

// embeddedTrace is a copy of plan/testdata/traces/alexnet.json, small enough
// to plan at once, so that the program does something with no flags.
//
//go:embed alexnet.json
var embeddedTrace []byte

// readInput reads a trace or, for a .csv file, a MiniMalloc problem, and
// scales its sizes by unit. An empty path reads the embedded trace.
func readInput(path string, unit uint64) (*plan.Trace, error) {
	var r io.Reader = os.Stdin
	switch path {
	case "":
		path, r = embeddedName, bytes.NewReader(embeddedTrace)
	case "-":
	default:
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		reqs, err := plan.ReadCSV(r, unit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return csvTrace(path, reqs), nil
	}
	tr, err := plan.ReadTrace(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, t := range tr.Tensors {
		size, ok := mul(t.Size, unit)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %d: size %d times unit %d overflows 64 bits: %w", path, i, t.Size, unit, plan.ErrTrace)
		}
		tr.Tensors[i].Size = size
	}
	return tr, nil
}

// csvTrace dresses a CSV problem as a trace for the summary and drawing:
// named after its file, with as many ops as its last step needs.
func csvTrace(path string, reqs []plan.Request) *plan.Trace {
	tr := &plan.Trace{Model: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Tensors: reqs}
	for _, r := range reqs {
		tr.Ops = max(tr.Ops, min(r.Last, math.MaxInt-1)+1)
	}
	return tr
}

// planJSON is the -json output.
type planJSON struct {
	ArenaBytes uint64 `json:"arena_bytes"`
	LowerBound uint64 `json:"lower_bound"`
	// Fits is present only when a capacity was asked for.
	Fits    *bool    `json:"fits,omitempty"`
	Offsets []uint64 `json:"offsets"`
}

func writeJSON(w io.Writer, res *plan.Result, hasCapacity, fits bool) error {
	out := planJSON{ArenaBytes: res.ArenaBytes, LowerBound: res.LowerBound, Offsets: res.Offsets}
	if hasCapacity {
		out.Fits = &fits
	}
	if err := json.NewEncoder(w).Encode(out); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// about is what -h prints before the flags.
const about = `plan plans the buffers of a recorded inference trace (JSON) or of a problem
in MiniMalloc's CSV format, and reports the arena the plan needs against the
lower bound, as a summary, as JSON (-json) or as an SVG drawing (-svg);
-capacity asks for a layout within that many bytes. With no -in it plans a
small embedded trace (alexnet) and says so on stderr. It exits 0 when a layout
is printed (and fits), 1 on bad input, 2 on a bad command line, 3 when
nothing fits the capacity.`
