package ptx

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ptxTypeSize is the bytes of t, a PTX fundamental type a parameter may
// have, or 0 for any other word. A switch, as a map's hashing of every word
// of every parameter list costs more than the rest of the parameter's
// reading.
func ptxTypeSize(t string) uint32 {
	switch t {
	case ".b8", ".u8", ".s8":
		return 1
	case ".b16", ".u16", ".s16", ".f16", ".bf16":
		return 2
	case ".b32", ".u32", ".s32", ".f32":
		return 4
	case ".b64", ".u64", ".s64", ".f64":
		return 8
	}
	return 0
}

// errArrayWraps is an array parameter whose size in bytes does not fit 32
// bits: the JIT takes such text for no PTX at all.
var errArrayWraps = errors.New("the array's size does not fit 32 bits")

// ptxParams appends the size of each comma-separated parameter of toks to
// *sizes, and returns the space they take together, each at an offset its
// alignment divides.
func ptxParams(toks ptxToks, sizes *[]uint32) (space uint64, err error) {
	for k := 1; toks.len() > 0; k++ {
		end := indexOf(toks, ",", "")
		if end < 0 {
			end = toks.len()
		} else if end == toks.len()-1 {
			return 0, fmt.Errorf("parameter %d: nothing after the last comma", k)
		}
		n, a, err := ptxParam(toks.slice(0, end))
		if err != nil {
			return 0, fmt.Errorf("parameter %d: %w", k, err)
		}
		// space stays below 2^33 + 2^32: each parameter is under 2^32 B,
		// and a list past the largest parameter space is refused at once.
		space = (space+a-1)/a*a + uint64(n)
		if space > 1<<32 {
			return space, nil
		}
		*sizes = append(*sizes, n)
		toks = toks.slice(min(end+1, toks.len()), toks.len())
	}
	return space, nil
}

// ptxParam sizes one parameter declaration, and gives its alignment:
// ".param", then a type and the alignment and pointer attributes around it,
// a name, and an optional array length, in that order.
func ptxParam(toks ptxToks) (size uint32, alignment uint64, err error) {
	decl := func() string {
		words := make([]string, toks.len())
		for i := range words {
			words[i] = toks.at(i).s
		}
		return strings.Join(words, " ")
	}
	word := func(i int) string { return toks.at(i).s }
	if toks.len() == 0 || word(0) != ".param" {
		return 0, 0, fmt.Errorf("%q is not a .param declaration", decl())
	}
	var elem uint32
	i := 1
	for ; i < toks.len() && strings.HasPrefix(word(i), "."); i++ {
		switch w := word(i); {
		case w == ".align":
			i++
			if i >= toks.len() || !ptxDigits(word(i)) {
				return 0, 0, fmt.Errorf(".align without a number in %q", decl())
			}
			a, err := strconv.ParseUint(word(i), 10, 32)
			if err != nil || a == 0 || a&(a-1) != 0 {
				return 0, 0, fmt.Errorf(".align %s in %q is not a power of two", word(i), decl())
			}
			alignment = a
		case ptxTypeSize(w) != 0:
			if elem != 0 {
				return 0, 0, fmt.Errorf("two types in %q", decl())
			}
			elem = ptxTypeSize(w)
		case strings.HasPrefix(w, ".ptr") && strings.HasSuffix(w, ".align"):
			// ".ptr.global.align 4", the attributes written as one word;
			// the alignment is the pointee's, not the parameter's.
			i++
			if i >= toks.len() || !ptxDigits(word(i)) {
				return 0, 0, fmt.Errorf(".align without a number in %q", decl())
			}
		case strings.HasPrefix(w, ".ptr"), w == ".global", w == ".const", w == ".local", w == ".shared":
		default:
			return 0, 0, fmt.Errorf("%q in %q is no type or attribute", w, decl())
		}
	}
	if elem == 0 {
		return 0, 0, fmt.Errorf("no type in %q", decl())
	}
	if alignment == 0 {
		alignment = uint64(elem)
	}
	if i >= toks.len() || !ptxIdent(word(i)) {
		return 0, 0, fmt.Errorf("no name in %q", decl())
	}
	i++
	count := uint64(1)
	if i < toks.len() && word(i) == "[" {
		if i+2 >= toks.len() || word(i+2) != "]" {
			return 0, 0, fmt.Errorf("array length of %q", decl())
		}
		n, err := strconv.ParseUint(word(i+1), 10, 64)
		if err != nil || n == 0 {
			return 0, 0, fmt.Errorf("array length %q", word(i+1))
		}
		if n > math.MaxUint32/uint64(elem) {
			return 0, 0, fmt.Errorf("%q: %w", decl(), errArrayWraps)
		}
		count = n
		i += 3
	}
	if i < toks.len() {
		return 0, 0, fmt.Errorf("%q after the name in %q", word(i), decl())
	}
	return elem * uint32(count), alignment, nil
}
