package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// tolerance is the target: the binding's GEMMs within 2% of C's.
const tolerance = 0.02

// hostBound is the share of a GEMM's GPU time above which queueing a call
// takes the host nearly as long as the GPU takes to run it: the GPU may then
// wait for the host, and the events time the calls' host cost.
const hostBound = 0.9

// reference is the other program's output: the cuBLAS it ran and its rows.
type reference struct {
	cublas string
	rows   map[string]row
}

// row is one "gemm: shape=" line.
type row struct {
	typ, launch   string
	m, n, k, reps int
	ms, hostUs    float64
}

// readReference reads the "gemm:" lines of r, the output of cref/gemm.c or
// of this tool with -machine; it ignores every other line.
func readReference(r io.Reader) (reference, error) {
	ref := reference{rows: map[string]row{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		rest, ok := strings.CutPrefix(sc.Text(), "gemm: ")
		if !ok {
			continue
		}
		kv := map[string]string{}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		if v, ok := kv["cublas"]; ok {
			ref.cublas = v
			continue
		}
		var rw row
		var err error
		ints := []struct {
			key string
			dst *int
		}{{"m", &rw.m}, {"n", &rw.n}, {"k", &rw.k}, {"reps", &rw.reps}}
		for _, f := range ints {
			if err == nil {
				*f.dst, err = strconv.Atoi(kv[f.key])
			}
		}
		if err == nil {
			rw.ms, err = strconv.ParseFloat(kv["ms"], 64)
		}
		if err == nil {
			rw.hostUs, err = strconv.ParseFloat(kv["host_us"], 64)
		}
		rw.typ, rw.launch = kv["type"], kv["launch"]
		if err != nil || kv["shape"] == "" || rw.typ == "" || rw.launch == "" || rw.ms < 0 {
			return ref, fmt.Errorf("line %d: %q: want shape, type, m, n, k, reps, launch, ms (0 or more) and host_us", n, sc.Text())
		}
		ref.rows[kv["shape"]] = rw
	}
	if err := sc.Err(); err != nil {
		return ref, err
	}
	if len(ref.rows) == 0 {
		return ref, fmt.Errorf("no \"gemm: shape=\" line: give the output of cref/gemm.c, or of this tool with -machine")
	}
	return ref, nil
}

// compare prints, for each of results, the ratio of its time to the time
// file gives for the same shape.
func compare(w io.Writer, file, version string, results []result) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	ref, err := readReference(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	same := "the same library"
	if ref.cublas != version {
		same = "NOT the same library: the ratios compare two libraries, not the binding"
	}
	fmt.Fprintf(w, "\nGo/C: this run against %s (cuBLAS %s there, %s here: %s)\n", file, ref.cublas, version, same)
	fmt.Fprintf(w, "%-10s %-5s %6s %6s %6s %11s %11s %7s %9s %9s  %s\n", "shape", "type", "M", "N", "K", "Go ms", "C ms", "Go/C", "Go us", "C us", "within 2%")
	within, compared := 0, 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		c, ok := ref.rows[r.name]
		switch {
		case !ok:
			fmt.Fprintf(w, "%-10s not in %s\n", r.name, file)
			continue
		case c.typ != typeName(r.t) || c.m != r.m || c.n != r.n || c.k != r.k || c.reps != r.reps || c.launch != r.launchName():
			fmt.Fprintf(w, "%-10s not the same calls: %s %dx%dx%d, %d reps by %s there; %s %dx%dx%d, %d reps by %s here\n",
				r.name, c.typ, c.m, c.n, c.k, c.reps, c.launch, typeName(r.t), r.m, r.n, r.k, r.reps, r.launchName())
			continue
		}
		ratio := r.ms / c.ms
		if r.ms == c.ms {
			ratio = 1 // 0 ms in both, as the fake's events give
		}
		compared++
		lo, hi = min(lo, ratio), max(hi, ratio)
		verdict := "no"
		if math.Abs(ratio-1) <= tolerance {
			verdict = "yes"
			within++
		}
		if r.hostUs >= hostBound*r.ms*1e3 || c.hostUs >= hostBound*c.ms*1e3 {
			verdict += " (host-bound: the GPU may wait for the calls)"
		}
		fmt.Fprintf(w, "%-10s %-5s %6d %6d %6d %11.6f %11.6f %7.4f %9.2f %9.2f  %s\n", r.name, typeName(r.t), r.m, r.n, r.k, r.ms, c.ms, ratio, r.hostUs, c.hostUs, verdict)
	}
	if compared == 0 {
		return fmt.Errorf("%s: no shape of this run is there with the same calls", file)
	}
	fmt.Fprintf(w, "%d of %d shapes within %.0f%% of C (Go/C %.4f to %.4f); us: host microseconds a call while queueing\n", within, compared, tolerance*100, lo, hi)
	return nil
}
