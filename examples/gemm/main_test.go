package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestGemmOnTheFake(t *testing.T) {
	s, stderr := clitest.OK(t, run, "-runtime=fake")
	for _, want := range []string{"runtime: fake", "cuBLAS 13.1.0 (fake)", "workspace 32 MiB from the pool", "ms/GEMM", "host us/call",
		"every shape's last GEMM checked against the CPU: 256 elements each", "(fake runtime: not a GPU timing)"} {
		assert.Contains(t, s, want)
	}
	for _, sh := range shapes(32) {
		assert.Regexp(t, fmt.Sprintf(`(?m)^%s +%s +%d +%d +%d +2 +3 `, regexpQuote(sh.name), typeName(sh.t), sh.m, sh.n, sh.k), s, "one row a shape, at the fake's defaults")
	}
	assert.NotContains(t, s, "gemm: shape=", "machine lines only with -machine")
	assert.Contains(t, stderr, "gemm: cube.f32 128x128x128: 1 warm-up calls, 3 trials of 2\n", "progress on stderr")
}

func regexpQuote(s string) string { return strings.ReplaceAll(s, ".", `\.`) }

// The machine lines of one run read back as the reference of the next: the
// same calls, and the fake's event times are the same each run. A run that
// launches otherwise makes other calls.
func TestMachineLinesAreWhatCompareReads(t *testing.T) {
	for _, launch := range []string{"stream", "graph"} {
		t.Run(launch, func(t *testing.T) {
			flags := []string{"-runtime=fake"}
			if launch == "graph" {
				flags = append(flags, "-graph")
			}
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run(append(flags, "-machine"), &out, &errOut), errOut.String())
			assert.Contains(t, out.String(), "\nlaunch: "+launch+", ")
			if launch == "graph" {
				assert.Contains(t, out.String(), "graphs: 0 memory nodes in all 12; 1 to 1 kernel nodes a GEMM\n", "the workspace is set")
			} else {
				assert.NotContains(t, out.String(), "graphs:")
			}
			assert.Contains(t, out.String(), "gemm: cublas=13.1.0\n")
			assert.Contains(t, out.String(), "gemm: shape=l2.b32 type=f32 m=128 n=32 k=128 reps=2 trials=3 launch="+launch+" ms=")
			file := filepath.Join(t.TempDir(), "c.txt")
			require.NoError(t, os.WriteFile(file, out.Bytes(), 0o600))

			out.Reset()
			require.Equal(t, 0, run(append(flags, "-compare", file), &out, &errOut), errOut.String())
			assert.Contains(t, out.String(), "(cuBLAS 13.1.0 there, 13.1.0 here: the same library)")
			assert.Contains(t, out.String(), "12 of 12 shapes within 2% of C (Go/C 1.0000 to 1.0000)")

			other := []string{"-runtime=fake", "-graph", "-compare", file}
			if launch == "graph" {
				other = other[:1:1]
				other = append(other, "-compare", file)
			}
			errOut.Reset()
			require.Equal(t, 1, run(other, &out, &errOut))
			assert.Contains(t, errOut.String(), "no shape of this run is there with the same calls")
		})
	}
}

func TestCompare(t *testing.T) {
	results := []result{
		{shape: shape{"cube.f32", cublas.Float32, 64, 64, 64}, timing: timing{reps: 50}, ms: 1.01, hostUs: 3},
		{shape: shape{"l1.b1", cublas.Float32, 4096, 1, 1024}, timing: timing{reps: 50}, ms: 0.0105, hostUs: 10},
		{shape: shape{"l2.b1", cublas.Float32, 4096, 1, 4096}, timing: timing{reps: 50}, ms: 0.02, hostUs: 4},
		{shape: shape{"l3.b1", cublas.Float32, 1024, 1, 4096}, timing: timing{reps: 50}, ms: 0.02, hostUs: 4},
	}
	for _, tc := range []struct {
		name, file string
		want       []string
		err        string
	}{
		{
			name: "ratios",
			file: "runtime: C\ngemm: cublas=13.1.0\n" +
				"gemm: shape=cube.f32 type=f32 m=64 n=64 k=64 reps=50 trials=7 launch=stream ms=1.000000 min_ms=0.9 tflops=1 host_us=2.00\n" +
				"gemm: shape=l1.b1 type=f32 m=4096 n=1 k=1024 reps=50 trials=7 launch=stream ms=0.010000 min_ms=0.01 tflops=1 host_us=3.00\n" +
				"gemm: shape=l2.b1 type=f32 m=4096 n=1 k=4096 reps=50 trials=7 launch=graph ms=0.020000 min_ms=0.02 tflops=1 host_us=3.00\n",
			want: []string{
				"cube.f32   f32       64     64     64    1.010000    1.000000  1.0100      3.00      2.00  yes\n",
				"l1.b1      f32     4096      1   1024    0.010500    0.010000  1.0500     10.00      3.00  no (host-bound: the GPU may wait for the calls)\n",
				"l2.b1      not the same calls: f32 4096x1x4096, 50 reps by graph there; f32 4096x1x4096, 50 reps by stream here\n",
				"l3.b1      not in ",
				"1 of 2 shapes within 2% of C (Go/C 1.0100 to 1.0500)",
				"(cuBLAS 13.1.0 there, 13.1.0 here: the same library)",
			},
		},
		{
			name: "another library",
			file: "gemm: cublas=12.9.1\ngemm: shape=cube.f32 type=f32 m=64 n=64 k=64 reps=50 trials=7 launch=stream ms=1.000000 min_ms=0.9 tflops=1 host_us=2.00\n",
			want: []string{"(cuBLAS 12.9.1 there, 13.1.0 here: NOT the same library"},
		},
		{name: "no rows", file: "runtime: C\n", err: `no "gemm: shape=" line`},
		{name: "a row without its time", file: "gemm: shape=cube.f32 type=f32 m=64 n=64 k=64 reps=50 launch=stream\n", err: "line 1: "},
		{name: "nothing the same", file: "gemm: shape=cube.f32 type=f16 m=64 n=64 k=64 reps=50 launch=stream ms=1 host_us=1\n", err: "no shape of this run is there with the same calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.txt")
			require.NoError(t, os.WriteFile(file, []byte(tc.file), 0o600))
			var out bytes.Buffer
			err := compare(&out, file, "13.1.0", results)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

// check passes the exact product in every type and names an element that
// is off.
func TestCheckCatchesAWrongElement(t *testing.T) {
	for _, ty := range []cublas.DataType{cublas.Float32, cublas.Float16, cublas.BFloat16} {
		t.Run(typeName(ty), func(t *testing.T) {
			s := shape{"small", ty, 7, 3, 5}
			a, b := values(s.m*s.k, seedA), values(s.k*s.n, seedB)
			c := make([]float32, s.m*s.n)
			for j := range s.n {
				for i := range s.m {
					for l := range s.k {
						c[i+j*s.m] += a[i+l*s.m] * b[l+j*s.k]
					}
				}
			}
			require.NoError(t, check(s, a, b, encode(c, ty)))
			c[s.m*s.n-1] += 1
			err := check(s, a, b, encode(c, ty))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "small: C(6, 2) is ")
		})
	}
}

// Every value the generator makes is exact in each type, so that the Go tool
// and the C program, which encode them separately, hold the same bits.
func TestValuesAreExactInEveryType(t *testing.T) {
	seen := map[float32]bool{}
	for _, v := range values(1<<16, seedA) {
		seen[v] = true
		require.True(t, v >= -1 && v < 1, "%g", v)
		require.Equal(t, v, cublas.Float16FromBits(cublas.Float16Bits(v)), "%g in FP16", v)
		require.Equal(t, v, cublas.BFloat16FromBits(cublas.BFloat16Bits(v)), "%g in BF16", v)
	}
	assert.Len(t, seen, 512, "every k/256 for k in [-256, 256)")
}

func TestShapes(t *testing.T) {
	s := shapes(1)
	require.Len(t, s, 12)
	assert.Equal(t, shape{"cube.bf16", cublas.BFloat16, 4096, 4096, 4096}, s[2])
	assert.Equal(t, shape{"l1.b8", cublas.Float32, 4096, 8, 1024}, s[6], "M: the layer's outputs, N: the batch, K: its inputs")
	assert.Equal(t, shape{"l3.b32", cublas.Float32, 1024, 32, 4096}, s[11])
	assert.Equal(t, shape{"l3.b1", cublas.Float32, 1, 1, 1}, shapes(1 << 20)[5], "at least 1")
}

// cref/gemm.c prints what report.go prints, lists the shapes shapes.go lists
// and fills the operands as values.go does: -compare and a reader comparing
// the two outputs line by line rely on it.
func TestTheCProgramKeepsTheGoToolsFormatsAndValues(t *testing.T) {
	src, err := os.ReadFile("cref/gemm.c")
	require.NoError(t, err)
	c := string(src)
	literal := func(f string) string { return `"` + strings.ReplaceAll(f, "\n", `\n`) + `"` }
	for _, want := range []string{
		literal(headerFormat), literal(rowFormat), literal(versionFormat), literal(machineFormat), literal(streamLine), literal(graphLine),
		`graph ? "graph" : "stream"`, "cudaStreamCaptureModeThreadLocal",
		`"ms/GEMM", "min ms", "TFLOP/s", "host us/call"`,
		"x = x * 1664525u + 1013904223u;", "(float)((int)(x >> 23) - 256) / 256.0f",
		fmt.Sprintf("(size_t)p->m * p->k, %d)", seedA), fmt.Sprintf("(size_t)p->k * p->n, %d)", seedB),
		fmt.Sprintf("{{%d, %d}, {%d, %d}, {%d, %d}}", mlpLayers[0][0], mlpLayers[0][1], mlpLayers[1][0], mlpLayers[1][1], mlpLayers[2][0], mlpLayers[2][1]),
		fmt.Sprintf("batches[3] = {%d, %d, %d}", batches[0], batches[1], batches[2]),
		fmt.Sprintf("#define WORKSPACE (%du << 20)", workspace>>20),
		`"cube.%s"`, `"l%d.b%d"`, "CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT", "cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)",
	} {
		assert.Contains(t, c, want)
	}
	assert.NotContains(t, c, "TF32", "the default math mode, as NewHandle sets it")
}

func TestRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-reps", "0"}, {"-trials", "0"}, {"-scale", "0"}, {"-warmup", "-1"}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%v", args)
		assert.Contains(t, errOut.String(), "must be at least")
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-runtime=fake", "-compare", filepath.Join(t.TempDir(), "missing")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "missing")
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) {
	clitest.Help(t, run, about, "-runtime", "-reps", "-trials", "-warmup", "-scale", "-machine", "-compare")
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{1, 2, 9}))
	assert.Equal(t, 2.5, median([]float64{1, 2, 3, 9}))
	assert.True(t, math.IsNaN(median([]float64{math.NaN()})))
}
