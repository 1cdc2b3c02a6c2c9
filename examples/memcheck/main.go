// Command memcheck makes four deliberate memory bugs in a program that uses
// a pool, and shows which detector catches each.
//
// The bugs:
//
//	overflow  a kernel writes one byte past the end of a 4 KiB buffer
//	lifetime  a kernel reads a buffer at a step outside its Live range,
//	          when the bytes it shares with another buffer are no buffer's
//	released  a kernel reads through a buffer's address kept past ReleaseAll
//	padding   a kernel writes 120 bytes into a 100-byte buffer: past its end,
//	          but inside the 256 bytes it is aligned to
//
// The detectors:
//
//	guards    the pool is made WithGuards: Check finds the writes in the
//	          guards, and reads of dead or released buffers bring back
//	          ReleasedPoison, which Step and ReleaseAll fill them with
//	memcheck  the fake runtime WithMemcheck enforces the annotations the pool
//	          makes of its buffers (the fake only; each bug on a fresh fake,
//	          as a fault is sticky)
//	none      no checks: the bug runs silently, for compute-sanitizer to
//	          find through the same annotations, made with NVTX on CUDA;
//	          one bug a process, as the fault it reports ends the context:
//	          compute-sanitizer --tool memcheck memcheck -runtime cuda -detector none -bug overflow
//
// -detector all is guards and memcheck on the fake, guards on CUDA. The
// exit status is 0 when every detector asked for caught every bug, 1 when
// one missed, 2 for a usage error.
//
//	go run ./examples/memcheck [-runtime=auto|cuda|fake] [-detector=all|guards|memcheck|none] [-bug=all|overflow|lifetime|released|padding]
package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/cli"
)

func main() { cli.Main(run) }

var detectors = []string{"guards", "memcheck", "none"}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("memcheck", about, stderr)
	which := cmd.Runtime()
	detector := cmd.String("detector", "all", "what catches the bugs: all, "+strings.Join(detectors, ", "))
	only := cmd.String("bug", "all", "the bug to make: all, "+strings.Join(bugNames(), ", "))
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "memcheck: "+format+"\n", args...)
		return 2
	}
	if cmd.NArg() > 0 {
		return usage("unexpected arguments %q", cmd.Args())
	}
	if !slices.Contains([]string{"", "auto", "cuda", "fake"}, *which) {
		return usage("unknown -runtime %q: want %s", *which, choose.Modes)
	}
	if *detector != "all" && !slices.Contains(detectors, *detector) {
		return usage("unknown -detector %q: want all, %s", *detector, strings.Join(detectors, ", "))
	}
	chosen := slices.Clone(bugs)
	if *only != "all" {
		chosen = slices.DeleteFunc(chosen, func(b bug) bool { return b.name != *only })
		if len(chosen) == 0 {
			return usage("unknown -bug %q: want all, %s", *only, strings.Join(bugNames(), ", "))
		}
	}
	if *which == "cuda" && *detector == "memcheck" {
		return usage("-detector memcheck needs the fake runtime; on CUDA use -detector none under compute-sanitizer")
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	dets := []string{*detector}
	switch {
	case *detector == "all" && rt.CUDA:
		dets = []string{"guards"}
	case *detector == "all":
		dets = []string{"guards", "memcheck"}
	case *detector == "memcheck" && rt.CUDA:
		return usage("-detector memcheck needs the fake runtime, and the runtime chosen is CUDA; use -runtime fake")
	}

	fmt.Fprintf(stdout, "runtime: %s\n\n", rt.Description)
	fmt.Fprintf(stdout, "%-10s %-10s %-7s %s\n", "bug", "detector", "caught", "how")
	var missed []string
	for _, b := range chosen {
		for _, d := range dets {
			var on cudart.Full = rt
			if d == "memcheck" {
				on = cudarttest.NewFake(cudarttest.WithMemcheck())
			}
			r, err := try(on, b, d)
			if err != nil {
				fmt.Fprintf(stderr, "memcheck: bug %s, detector %s: %v\n", b.name, d, err)
				return 1
			}
			caught := map[bool]string{true: "yes", false: "no"}[r.caught]
			if d == "none" {
				caught = "-"
			}
			fmt.Fprintf(stdout, "%-10s %-10s %-7s %s\n", r.bug, r.detector, caught, r.how)
			if r.missed() {
				missed = append(missed, r.bug+" by "+r.detector)
			}
		}
	}
	fmt.Fprintln(stdout)
	if len(missed) > 0 {
		fmt.Fprintf(stdout, "missed: %s\n", strings.Join(missed, ", "))
		return 1
	}
	if slices.Equal(dets, []string{"none"}) {
		fmt.Fprintln(stdout, "every bug ran; none was checked")
		return 0
	}
	fmt.Fprintln(stdout, "every bug was caught by every detector asked for")
	return 0
}

func bugNames() []string {
	var out []string
	for _, b := range bugs {
		out = append(out, b.name)
	}
	return out
}

// about is what -h prints before the flags.
const about = `memcheck makes four deliberate memory bugs in a program that uses a pool (a
one-byte overflow, a read outside a buffer's lifetime, a use after
ReleaseAll, an overflow into alignment padding) and shows which detector
catches each: the pool's guards, the fake runtime's memcheck, or none, for
compute-sanitizer to find on a GPU. It exits 0 when every detector asked for
caught every bug, 1 when one missed.`
