// Package ptx reads the kernel entry points of PTX text and checks a launch
// against them, before CUDA sees it: the binding in cudart and the fake in
// cudarttest check launches the same way. It is not part of a user's API.
package ptx

import (
	"fmt"
	"strconv"
	"strings"
)

// Entry is a kernel entry point (.entry) declared in PTX text.
type Entry struct {
	Name string
	// Params are the sizes in bytes of the kernel's parameters, in order.
	Params []uint32
}

// Info is what Parse reads from PTX text: what a launch needs to be
// checked before CUDA sees it.
type Info struct {
	Entries []Entry
	// CallsMalloc: the module declares the device-side malloc, so its
	// kernels draw on the device's malloc heap (LimitMallocHeapSize).
	CallsMalloc bool
}

// Entry finds the entry point called name.
func (p Info) Entry(name string) (Entry, bool) {
	for _, e := range p.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Names lists the entry points in the order the PTX declares them.
func (p Info) Names() []string {
	names := make([]string, len(p.Entries))
	for i, e := range p.Entries {
		names[i] = e.Name
	}
	return names
}

// ptxTypeSizes are the bytes of each PTX fundamental type a parameter may have.
var ptxTypeSizes = map[string]uint32{
	".b8": 1, ".u8": 1, ".s8": 1,
	".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2, ".bf16": 2,
	".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4,
	".b64": 8, ".u64": 8, ".s64": 8, ".f64": 8,
}

// Parse reads the entry points of ptx and their parameter lists, e.g.
// ".visible .entry fill(.param .u64 p, .param .u32 n)" gives fill with
// parameters of 8 and 4 bytes; an array parameter (".param .align 8 .b8
// s[24]") counts its whole length. It checks only the declarations it
// reads: the driver's JIT compiler judges the rest of the text.
func Parse(ptx string) (Info, error) {
	toks := ptxTokens(ptx)
	var info Info
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case ".extern":
			if j := indexOf(toks[i:], "malloc", ";"); j > 0 {
				info.CallsMalloc = true
			}
		case ".entry":
			if i+1 >= len(toks) {
				return Info{}, fmt.Errorf("cudart: PTX ends after .entry")
			}
			e := Entry{Name: toks[i+1]}
			i += 2
			if i < len(toks) && toks[i] == "(" {
				end := indexOf(toks[i:], ")", "{")
				if end < 0 {
					return Info{}, fmt.Errorf("cudart: PTX .entry %s: parameter list without its closing parenthesis", e.Name)
				}
				params, err := ptxParams(toks[i+1 : i+end])
				if err != nil {
					return Info{}, fmt.Errorf("cudart: PTX .entry %s: %w", e.Name, err)
				}
				e.Params = params
				i += end
			}
			if _, dup := info.Entry(e.Name); dup {
				return Info{}, fmt.Errorf("cudart: PTX declares .entry %s twice", e.Name)
			}
			info.Entries = append(info.Entries, e)
		}
	}
	return info, nil
}

// indexOf is the index of the first want in toks before any stop, or -1.
func indexOf(toks []string, want, stop string) int {
	for i, t := range toks {
		switch t {
		case want:
			return i
		case stop:
			return -1
		}
	}
	return -1
}

// ptxParams sizes each comma-separated parameter of toks.
func ptxParams(toks []string) ([]uint32, error) {
	var sizes []uint32
	for len(toks) > 0 {
		end := indexOf(toks, ",", "")
		if end < 0 {
			end = len(toks)
		}
		n, err := ptxParam(toks[:end])
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", len(sizes)+1, err)
		}
		sizes = append(sizes, n)
		toks = toks[min(end+1, len(toks)):]
	}
	return sizes, nil
}

// ptxParam sizes one parameter declaration: ".param", optional alignment and
// pointer attributes, a type, a name and an optional array length.
func ptxParam(toks []string) (uint32, error) {
	if len(toks) == 0 || toks[0] != ".param" {
		return 0, fmt.Errorf("%q is not a .param declaration", strings.Join(toks, " "))
	}
	var size uint32
	count := uint32(1)
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t == ".align":
			i++
		case t == "[":
			if i+2 >= len(toks) || toks[i+2] != "]" {
				return 0, fmt.Errorf("array length of %q", strings.Join(toks, " "))
			}
			n, err := strconv.ParseUint(toks[i+1], 10, 32)
			if err != nil || n == 0 {
				return 0, fmt.Errorf("array length %q", toks[i+1])
			}
			count = uint32(n)
			i += 2
		case ptxTypeSizes[t] != 0:
			size = ptxTypeSizes[t]
		}
	}
	if size == 0 {
		return 0, fmt.Errorf("no type in %q", strings.Join(toks, " "))
	}
	return size * count, nil
}

// ptxTokens splits ptx into words and the punctuation Parse reads,
// without comments.
func ptxTokens(ptx string) []string {
	var b strings.Builder
	for len(ptx) > 0 {
		switch {
		case strings.HasPrefix(ptx, "//"):
			end := strings.IndexByte(ptx, '\n')
			if end < 0 {
				end = len(ptx)
			}
			ptx = ptx[end:]
		case strings.HasPrefix(ptx, "/*"):
			end := strings.Index(ptx, "*/")
			if end < 0 {
				end = len(ptx) - 2
			}
			ptx = ptx[end+2:]
		case strings.ContainsRune("(),[]{};", rune(ptx[0])):
			b.WriteByte(' ')
			b.WriteByte(ptx[0])
			b.WriteByte(' ')
			ptx = ptx[1:]
		default:
			b.WriteByte(ptx[0])
			ptx = ptx[1:]
		}
	}
	return strings.Fields(b.String())
}
