package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Positives parses a flag's comma-separated list of integers 1 to most, as
// "1,2,4"; distinct refuses a number given twice, where each is a
// configuration to run once.
func Positives(s string, most int, distinct bool) ([]int, error) {
	want := "integers"
	if distinct {
		want = "distinct integers"
	}
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > most || distinct && seen[v] {
			return nil, fmt.Errorf("%q: want comma-separated %s 1 to %d", s, want, most)
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, nil
}
