package ptxgen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// header begins every module: PTX ISA 8.0 for sm_80 and later (the driver
// compiles it for the device at load, sm_90 included), 64-bit addresses.
const header = `
.version 8.0
.target sm_80
.address_size 64

`

// Module is a PTX module of decls, entries from Entry or module-scope
// declarations such as .shared arrays, one after another.
func Module(decls ...string) string {
	return header + strings.Join(decls, "\n")
}

// classes are the register classes an entry declares, in the order it
// declares them: the prefix a register's name begins with, and its type.
var classes = []struct{ prefix, typ string }{
	{"p", ".pred"},
	{"r", ".b32"},
	{"h", ".b16"},
	{"f", ".f32"},
	{"rd", ".b64"},
}

// paramClass is the register class a parameter of each type is loaded into.
var paramClass = map[string]string{"u64": "rd", "u32": "r", "f32": "f"}

// Entry is the kernel entry name with params, a comma-separated list of
// "type name" (type u64, u32 or f32), and body, the instructions that
// follow the loads of the parameters, each line after a newline. Entry
// panics on a type it does not know: params are constants of the program.
func Entry(name, params, body string) string {
	var sig []string
	var loads strings.Builder
	next := map[string]int{}
	for p := range strings.SplitSeq(params, ",") {
		typ, pname, ok := strings.Cut(strings.TrimSpace(p), " ")
		class, known := paramClass[typ]
		if !ok || !known {
			panic(fmt.Sprintf("ptxgen: entry %s: parameter %q is not \"u64|u32|f32 name\"", name, p))
		}
		next[class]++
		sig = append(sig, ".param ."+typ+" "+pname)
		fmt.Fprintf(&loads, "\n\tld.param.%s %%%s%d, [%s];", typ, class, next[class], pname)
	}
	code := loads.String() + body
	return fmt.Sprintf(".visible .entry %s(%s)\n{%s%s\n}\n", name, strings.Join(sig, ", "), declarations(code), code)
}

// register matches a register's name: its class and its number, none for
// a lone predicate %p.
var register = regexp.MustCompile(`%(rd|r|h|f|p)(\d*)\b`)

// declarations declares the registers code names: for each class, up to
// the highest number it uses.
func declarations(code string) string {
	highest := map[string]int{}
	lonePred := false
	for _, m := range register.FindAllStringSubmatch(code, -1) {
		if m[2] == "" {
			lonePred = lonePred || m[1] == "p"
			continue
		}
		n, _ := strconv.Atoi(m[2])
		highest[m[1]] = max(highest[m[1]], n+1)
	}
	var b strings.Builder
	if lonePred {
		b.WriteString("\n\t.reg .pred %p;")
	}
	for _, c := range classes {
		if n := highest[c.prefix]; n > 0 {
			fmt.Fprintf(&b, "\n\t.reg %s %%%s<%d>;", c.typ, c.prefix, n)
		}
	}
	return b.String()
}

// Elementwise is an Entry run one thread an element: the thread's index i,
// from Index(first), in %r(first+3); a thread whose i is at or past count,
// a register holding the element count, returns at once, and the others
// run body.
func Elementwise(name, params string, first int, count, body string) string {
	done := "$L_" + name + "_done"
	return Entry(name, params, fmt.Sprintf("%s\n\tsetp.ge.u32 %%p, %%r%d, %s;\n\t@%%p bra %s;%s\n%s:\n\tret;",
		Index(first), first+3, count, done, body, done))
}

// Index is the instructions that put the thread's index in a 1-D grid,
// ctaid.x × ntid.x + tid.x, in %r(first+3), with %r(first) to
// %r(first+2) holding the three; the index fits 32 bits.
func Index(first int) string {
	return fmt.Sprintf(`
	mov.u32 %%r%[1]d, %%ctaid.x;
	mov.u32 %%r%[2]d, %%ntid.x;
	mov.u32 %%r%[3]d, %%tid.x;
	mad.lo.s32 %%r%[4]d, %%r%[1]d, %%r%[2]d, %%r%[3]d;`, first, first+1, first+2, first+3)
}

// Index64 is Index for a grid of more than 2³² threads: the index, 64-bit,
// in %rd(wide+1), with %rd(wide) holding tid.x widened.
func Index64(first, wide int) string {
	return fmt.Sprintf(`
	mov.u32 %%r%[1]d, %%ctaid.x;
	mov.u32 %%r%[2]d, %%ntid.x;
	mov.u32 %%r%[3]d, %%tid.x;
	cvt.u64.u32 %%rd%[4]d, %%r%[3]d;
	mad.wide.u32 %%rd%[5]d, %%r%[1]d, %%r%[2]d, %%rd%[4]d;`, first, first+1, first+2, wide, wide+1)
}
