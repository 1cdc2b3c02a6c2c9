package ptxgen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

func ExampleElementwise() {
	fmt.Print(Module(Elementwise("scale", "u64 x, f32 a, u32 n", 2, "%r1", `
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.f32 %f2, [%rd4];
	mul.rn.f32 %f3, %f2, %f1;
	st.global.f32 [%rd4], %f3;`)))
	// Output:
	// .version 8.0
	// .target sm_80
	// .address_size 64
	//
	// .visible .entry scale(.param .u64 x, .param .f32 a, .param .u32 n)
	// {
	// 	.reg .pred %p;
	// 	.reg .b32 %r<6>;
	// 	.reg .f32 %f<4>;
	// 	.reg .b64 %rd<5>;
	// 	ld.param.u64 %rd1, [x];
	// 	ld.param.f32 %f1, [a];
	// 	ld.param.u32 %r1, [n];
	// 	mov.u32 %r2, %ctaid.x;
	// 	mov.u32 %r3, %ntid.x;
	// 	mov.u32 %r4, %tid.x;
	// 	mad.lo.s32 %r5, %r2, %r3, %r4;
	// 	setp.ge.u32 %p, %r5, %r1;
	// 	@%p bra $L_scale_done;
	// 	cvta.to.global.u64 %rd2, %rd1;
	// 	mul.wide.u32 %rd3, %r5, 4;
	// 	add.s64 %rd4, %rd2, %rd3;
	// 	ld.global.f32 %f2, [%rd4];
	// 	mul.rn.f32 %f3, %f2, %f1;
	// 	st.global.f32 [%rd4], %f3;
	// $L_scale_done:
	// 	ret;
	// }
}

// An entry declares each register class its text names, up to the
// highest number, and loads each parameter into the next register of its
// class.
func TestEntryDeclaresWhatItNames(t *testing.T) {
	for _, tc := range []struct {
		name, params, body string
		want               []string
	}{
		{"pointers", "u64 a, u64 b", "", []string{".reg .b64 %rd<3>;", "ld.param.u64 %rd1, [a];", "ld.param.u64 %rd2, [b];"}},
		{"classes", "u32 n, f32 x, u64 p, u32 m", "", []string{".reg .b32 %r<3>;", ".reg .f32 %f<2>;", ".reg .b64 %rd<2>;",
			"ld.param.u32 %r1, [n];", "ld.param.f32 %f1, [x];", "ld.param.u64 %rd1, [p];", "ld.param.u32 %r2, [m];"}},
		{"body registers", "u32 n", "\n\tcvt.f32.f16 %f7, %h3;\n\tsetp.eq.u32 %p2, %r9, 0;", []string{".reg .pred %p<3>;", ".reg .b32 %r<10>;", ".reg .b16 %h<4>;", ".reg .f32 %f<8>;"}},
		{"lone predicate", "u32 n", "\n\tsetp.eq.u32 %p, %r1, 0;", []string{".reg .pred %p;", ".reg .b32 %r<2>;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Entry("k", tc.params, tc.body)
			for _, w := range tc.want {
				assert.Contains(t, got, "\t"+w+"\n")
			}
			assert.Equal(t, len(tc.want)-strings.Count(strings.Join(tc.want, ""), "ld.param"), strings.Count(got, ".reg "), "declarations in\n%s", got)
		})
	}
}

// A parameter of a type Entry does not know is a mistake in the program's
// constants: it panics, naming it.
func TestEntryPanicsOnAnUnknownType(t *testing.T) {
	assert.PanicsWithValue(t, `ptxgen: entry k: parameter " s8 c" is not "u64|u32|f32 name"`, func() { Entry("k", "u64 p, s8 c", "") })
	assert.Panics(t, func() { Entry("k", "n", "") })
}

// The fake runtime reads what Module writes as CUDA does: each entry with
// its parameters, checked at launch.
func TestTheFakeLoadsAModule(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	f, ok := cudart.As[*cudarttest.Fake](rt)
	require.True(t, ok)
	var ran uint64
	f.RegisterKernel("fill", func(k *cudarttest.KernelContext) error {
		ran = k.Uint64(1)
		return nil
	})
	m, err := rt.ModuleLoadData(0, Module(Entry("fill", "u64 ptr, u64 n, u32 value", Index64(2, 3)+"\n\tret;")))
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.ModuleUnload(0, m)) }()
	fn, err := rt.ModuleGetFunction(0, m, "fill")
	require.NoError(t, err)
	one := cudart.Dim1(1)
	require.NoError(t, rt.LaunchKernel(0, fn, one, one, 0, 0, cudart.Arg[cudart.DevicePtr](0), cudart.Arg[uint64](9), cudart.Arg[uint32](7)))
	require.NoError(t, rt.DeviceSynchronize(0))
	assert.Equal(t, uint64(9), ran)
	assert.Error(t, rt.LaunchKernel(0, fn, one, one, 0, 0, cudart.Arg[uint64](9), cudart.Arg[uint32](7)), "two arguments for three parameters")
}
