package record

import (
	"slices"
	"testing"
)

func TestTBKeepsEachReportAndRunsCleanupsLastFirst(t *testing.T) {
	var r TB
	var ran []int
	r.Cleanup(func() { ran = append(ran, 1) })
	r.Cleanup(func() { ran = append(ran, 2) })
	r.Helper()
	r.Errorf("e%d", 1)
	r.Fatalf("f%d", 2)
	r.Logf("l%d", 3)
	r.RunCleanups()
	r.RunCleanups()
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"Errors", r.Errors, []string{"e1"}}, {"Fatals", r.Fatals, []string{"f2"}}, {"Logs", r.Logs, []string{"l3"}}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(ran, []int{2, 1}) {
		t.Errorf("cleanups ran %v, want [2 1], each once", ran)
	}
}
