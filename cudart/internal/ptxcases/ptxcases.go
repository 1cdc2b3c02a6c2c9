// Package ptxcases holds PTX texts the driver's JIT compiler refuses and
// some it takes, each with what the JIT does with it, as measured on an H100
// (CUDA 13.0, driver 580): cudart's parser and the fake are held to the
// table by the conformance suite, and the JIT itself by cudart's GPU test.
package ptxcases

import (
	"strconv"
	"strings"
)

// Code is the CUDA code the JIT answers a text with.
type Code int

// The codes of the table.
const (
	Loads      Code = 0   // CUDA_SUCCESS
	NotPTX     Code = 200 // CUDA_ERROR_INVALID_IMAGE: not PTX at all
	InvalidPTX Code = 218 // CUDA_ERROR_INVALID_PTX
)

// Case is one text and the JIT's answer; Line is the line the refusal
// names (the binding's, which is the JIT's or the directive it is about).
type Case struct {
	Name string
	PTX  string
	Code Code
	Line int
}

// Header is the header every case but those about the header has.
const Header = ".version 8.0\n.target sm_80\n.address_size 64\n"

// Kernel is a well-formed entry with two parameters, after Header.
const Kernel = "\n.visible .entry k(.param .u64 k_p, .param .u32 k_n)\n{\n\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [k_p];\n\tret;\n}\n"

// Cases is the table.
var Cases = []Case{
	{"well formed", Header + Kernel, Loads, 0},
	{"header only", Header, Loads, 0},
	{"globals and a function", Header + "\n.global .align 4 .u32 counter;\n.func (.param .b32 r) twice(.param .b32 x)\n{\n\t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [x];\n\tadd.s32 %r2, %r1, %r1;\n\tst.param.b32 [r], %r2;\n\tret;\n}\n" + Kernel, Loads, 0},
	{"comments first", "// generated\n/* block */\n" + Header + Kernel, Loads, 0},
	{"no .address_size", ".version 8.0\n.target sm_80\n" + Kernel, Loads, 0},
	{"older .version", ".version 7.0\n.target sm_80\n.address_size 64\n" + Kernel, Loads, 0},
	{"entry without parameters", Header + "\n.visible .entry k\n{\n\tret;\n}\n", Loads, 0},

	{"not PTX", "garbage", NotPTX, 1},
	{"empty", "", NotPTX, 1},
	{"JSON", "{\"not\": \"ptx\"}", NotPTX, 1},
	{"binary", "\x7fELF\x02\x01\x01", NotPTX, 1},
	{"no .version", ".target sm_80\n.address_size 64\n" + Kernel, NotPTX, 1},
	{".version after .target", ".target sm_80\n.version 8.0\n.address_size 64\n" + Kernel, NotPTX, 1},

	{".version without a number", ".version\n.target sm_80\n.address_size 64\n" + Kernel, InvalidPTX, 1},
	{".version not a number", ".version eight\n.target sm_80\n.address_size 64\n" + Kernel, InvalidPTX, 1},
	{".version without a minor", ".version 8\n.target sm_80\n.address_size 64\n" + Kernel, InvalidPTX, 1},
	{"no .target", ".version 8.0\n.address_size 64\n" + Kernel, InvalidPTX, 2},
	{".target without an architecture", ".version 8.0\n.target\n.address_size 64\n" + Kernel, InvalidPTX, 2},
	{".target unknown", ".version 8.0\n.target sm_xyz\n.address_size 64\n" + Kernel, InvalidPTX, 2},
	{".target no GPU has", ".version 8.0\n.target sm_999\n.address_size 64\n" + Kernel, InvalidPTX, 2},
	{".target debug without debug information", ".version 8.0\n.target sm_80, debug\n.address_size 64\n" + Kernel, InvalidPTX, 2},
	{".address_size 48", ".version 8.0\n.target sm_80\n.address_size 48\n" + Kernel, InvalidPTX, 3},
	{".address_size not a number", ".version 8.0\n.target sm_80\n.address_size big\n" + Kernel, InvalidPTX, 3},
	{".address_size without a number", ".version 8.0\n.target sm_80\n.address_size\n" + Kernel, InvalidPTX, 3},

	{"unterminated body", Header + "\n.visible .entry k(.param .u64 k_p)\n{\n\tret;\n", InvalidPTX, 8},
	{"unterminated parameter list", Header + "\n.visible .entry k(.param .u64 k_p\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"parameter without a type", Header + "\n.visible .entry k(.param k_p)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"parameter without a name", Header + "\n.visible .entry k(.param .u64)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"parameters without a comma", Header + "\n.visible .entry k(.param .u64 a .param .u32 b)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"trailing comma", Header + "\n.visible .entry k(.param .u64 a,)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"parameter not in .param", Header + "\n.visible .entry k(.reg .u64 a)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"parameter of no type", Header + "\n.visible .entry k(.param .u65 a)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"entry without a name", Header + "\n.visible .entry (.param .u64 a)\n{\n\tret;\n}\n", InvalidPTX, 5},
	{"entry without a name or parameters", Header + "\n.visible .entry\n{\n\tret;\n}\n", InvalidPTX, 6},
	{"entry without a body", Header + "\n.visible .entry k(.param .u64 a)\n", InvalidPTX, 5},
	{"entry twice", Header + Kernel + Kernel, InvalidPTX, 12},
	{"stray closing brace", Header + Kernel + "}\n", InvalidPTX, 11},
	{"unterminated block comment", Header + Kernel + "\n/* never closed\n" + Kernel, InvalidPTX, 12},

	// The JIT refuses an entry's parameters past its parameter space: "too
	// much parameter space" (an H200, CUDA 13.0). One .u64 past 4,352 B.
	{"4,360 B of parameters at .version 8.0", Params("8.0", ".param .align 8 .b8 a[4352], .param .u64 b"), InvalidPTX, 5},
	{"32,764 B of parameters at .version 8.0", Params("8.0", ".param .align 4 .b8 a[32764]"), InvalidPTX, 5},
	{"32,768 B of parameters at .version 8.0", Params("8.0", ".param .align 8 .b8 a[32768]"), InvalidPTX, 5},
	{"a 1 MiB array parameter", Params("8.0", ".param .align 8 .b8 a[1048576]"), InvalidPTX, 5},
	{"131,072 .u64 parameters", Params("8.0", U64Params(131072)), InvalidPTX, 5},
	// An array whose size in bytes does not fit 32 bits, wrapping 2^64 or
	// not, is a "Constant overflow" to the JIT (an H100, CUDA 13.0).
	{"an array parameter whose size wraps", Params("8.0", ".param .u64 a[2305843009213693952]"), InvalidPTX, 5},
	{"an array parameter of 2^32 B", Params("8.1", ".param .b8 a[4294967296]"), InvalidPTX, 5},
}

// Edges are texts at the edges of the JIT's limits that Parse reads as
// ParamSpace says, and the JIT was not yet measured at: cudart's GPU test
// reports what it does with them.
var Edges = []Case{
	{"4,352 B of parameters at .version 8.0", Params("8.0", ".param .align 8 .b8 a[4352]"), Loads, 0},
	{"4,360 B of parameters at .version 8.1", Params("8.1", ".param .align 8 .b8 a[4352], .param .u64 b"), Loads, 0},
	{"32,764 B of parameters at .version 8.1", Params("8.1", ".param .align 4 .b8 a[32764]"), Loads, 0},
	{"32,768 B of parameters at .version 8.1", Params("8.1", ".param .align 8 .b8 a[32768]"), InvalidPTX, 5},
	{"32,764 B with padding past it at .version 8.1", Params("8.1", ".param .u8 a, .param .align 8 .b8 b[32760]"), InvalidPTX, 5},
}

// Params is PTX of .version version for sm_80 with one entry, k, on line
// 5, whose parameter list is decl.
func Params(version, decl string) string {
	return ".version " + version + "\n.target sm_80\n.address_size 64\n\n.visible .entry k(" + decl + ")\n{\n\tret;\n}\n"
}

// U64Params is a parameter list of n .u64 parameters.
func U64Params(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(".param .u64 p")
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}
