package cudart

import "github.com/cudapool/cudapool/cudart/internal/ptx"

// testPTX declares the kernels the binding's tests launch; fakecuda.c
// runs fill.
const testPTX = `
.version 8.0
.target sm_80
.address_size 64

// fill(u32 *p, u32 n, u32 value)
.visible .entry fill(
	.param .u64 .ptr.global.align 4 fill_p,
	.param .u32 fill_n, /* a count */
	.param .u32 fill_value
)
{
	ret;
}

.extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);

.visible .entry mixed(.param .align 8 .b8 mixed_s[24], .param .f64 mixed_d, .param .u16 mixed_h)
{
	ret;
}

.visible .entry empty
{
	ret;
}
`

func testPTXInfo() ptx.Info {
	info, err := ptx.Parse(testPTX)
	if err != nil {
		panic(err)
	}
	return info
}

// withFill registers module 0x1000 with function 0x2000, fill, in l.
func withFill(l *library, dev int) {
	info := testPTXInfo()
	l.registry.addModule(0x1000, dev, info)
	e, _ := info.Entry("fill")
	l.registry.addFunction(0x2000, 0x1000, e)
}
