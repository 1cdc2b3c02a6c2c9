package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/cudart/internal/ptxcases"
)

// scaled are PTX texts that grow one feature n-fold, each loadable, for the
// benchmarks: entries, parameters, comments and .target options.
var scaled = []struct {
	name string
	text func(n int) string
}{
	{"entries", func(n int) string {
		var b strings.Builder
		b.WriteString(ptxcases.Header)
		for i := range n {
			fmt.Fprintf(&b, ".visible .entry k%d(.param .u64 p, .param .u32 n)\n{\n\tret;\n}\n", i)
		}
		return b.String()
	}},
	{"parameters", func(n int) string {
		// 1,000 one-byte parameters an entry, within the parameter space.
		var b strings.Builder
		b.WriteString(".version 8.1\n.target sm_80\n.address_size 64\n")
		for e := 0; e*1000 < n; e++ {
			fmt.Fprintf(&b, ".visible .entry k%d(", e)
			for i := e * 1000; i < min(n, (e+1)*1000); i++ {
				if i > e*1000 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, ".param .u8 p%d", i)
			}
			b.WriteString(")\n{\n\tret;\n}\n")
		}
		return b.String()
	}},
	{"comments", func(n int) string {
		var b strings.Builder
		b.WriteString(ptxcases.Header)
		for i := range n {
			fmt.Fprintf(&b, "// line comment %d\n/* block comment %d\n spanning lines */\n", i, i)
		}
		b.WriteString(ptxcases.Kernel)
		return b.String()
	}},
	{"targetOptions", func(n int) string {
		var b strings.Builder
		b.WriteString(".version 8.0\n.target sm_80")
		for range n {
			b.WriteString(", debug, texmode_unified")
		}
		b.WriteString("\n.address_size 64\n" + ptxcases.Kernel + ".section .debug_info { }\n")
		return b.String()
	}},
}

// BenchmarkParse parses texts of n and 4n of each feature: Parse's time is
// linear in the text, so 4n takes about 4 times as long as n. Each reports
// the process's CPU time a parse too (cpu-ns/op, where the platform tells
// it), the figure to read on a machine others share.
func BenchmarkParse(b *testing.B) {
	for _, s := range scaled {
		for _, n := range []int{4000, 16000} {
			bench(b, fmt.Sprintf("%s/n=%d", s.name, n), s.text(n))
		}
	}
}

// BenchmarkParse4MiB parses 4 MiB of PTX of each feature.
func BenchmarkParse4MiB(b *testing.B) {
	for _, s := range scaled {
		n := (4 << 20) / (len(s.text(4000)) / 4000)
		text := s.text(n)
		bench(b, fmt.Sprintf("%s/%d_KiB", s.name, len(text)>>10), text)
	}
}

func bench(b *testing.B, name, text string) {
	if _, err := Parse(text); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	b.Run(name, func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		before, ok := cpuTime()
		n := 0
		for b.Loop() {
			if _, err := Parse(text); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if after, _ := cpuTime(); ok {
			b.ReportMetric(float64((after-before).Nanoseconds())/float64(n), "cpu-ns/op")
		}
	})
}
