package cli

import "fmt"

// Launches parses a -launch flag of the serving examples: "graph" (a CUDA
// graph launch a request), eager (each call launched on its own: mlp says
// "calls", serve "kernels") or "both", into the modes to measure in order,
// true for graphs.
func Launches(s, eager string) ([]bool, error) {
	var out []bool
	if s == "graph" || s == "both" {
		out = append(out, true)
	}
	if s == eager || s == "both" {
		out = append(out, false)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-launch %q: want graph, %s or both", s, eager)
	}
	return out, nil
}
