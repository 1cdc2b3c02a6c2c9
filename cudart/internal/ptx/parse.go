package ptx

import "strings"

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

// Parse reads the entry points of ptx and their parameter lists, e.g.
// ".visible .entry fill(.param .u64 p, .param .u32 n)" gives fill with
// parameters of 8 and 4 bytes; an array parameter (".param .align 8 .b8
// s[24]") counts its whole length. It refuses, at the line the JIT names,
// what the driver's JIT refuses of the parts it reads: text that does not
// start with .version (no PTX at all), a malformed .version, a missing or
// unknown .target, an .address_size other than 32 or 64, a block comment
// that is not closed, braces that do not pair, an .entry without a name or
// a body, a parameter list that does not parse, an array parameter whose
// size does not fit 32 bits (a constant overflow to the JIT), and parameters
// over the parameter space of the version and target (ParamSpace). It does
// not judge the instructions: the JIT does. Its time is linear in the
// length of ptx.
func Parse(ptx string) (Info, error) {
	toks, err := ptxTokens(ptx)
	if err != nil {
		return Info{}, err
	}
	h, i, err := ptxHeader(toks)
	if err != nil {
		return Info{}, err
	}
	// Sized once: a map that grows rehashes every name it holds, and a
	// slice copies what it holds.
	entries := strings.Count(ptx, ".entry")
	info := Info{Entries: make([]Entry, 0, entries)}
	seen := make(map[string]bool, entries)
	var sizes []uint32 // every entry's parameter sizes, one after another
	depth, opened := 0, 0
	inExtern := false // between an .extern and the ; that ends it
	for ; i < toks.len(); i++ {
		switch t := toks.at(i); t.s {
		case "{":
			if depth == 0 {
				opened = t.line
			}
			depth++
		case "}":
			if depth == 0 {
				return Info{}, ptxErrorf(t.line, InvalidPTX, "} closes no block")
			}
			depth--
		case ".extern":
			inExtern = true
		case ";":
			inExtern = false
		case "malloc":
			info.CallsMalloc = info.CallsMalloc || inExtern
		case ".entry":
			e, next, err := ptxEntry(toks, i, h, &sizes)
			if err != nil {
				return Info{}, err
			}
			if seen[e.Name] {
				return Info{}, ptxErrorf(t.line, InvalidPTX, "duplicate .entry %s", e.Name)
			}
			seen[e.Name] = true
			info.Entries = append(info.Entries, e)
			i = next - 1
		}
	}
	if depth > 0 {
		return Info{}, ptxErrorf(lastLine(ptx), InvalidPTX, "the block opened at line %d is not closed", opened)
	}
	return info, nil
}

// lastLine is the number of ptx's last line, where the JIT reports text
// that ended too soon.
func lastLine(ptx string) int { return strings.Count(ptx, "\n") + 1 }

// ptxEntry reads the .entry at toks[i]: its name, its parameter list if
// any, which must fit the parameter space of h, and the directives up to
// its body, which must follow. It returns the index of the body's "{". The
// sizes of the parameters are appended to *sizes, which the entries share.
func ptxEntry(toks ptxToks, i int, h header, sizes *[]uint32) (Entry, int, error) {
	at := toks.at(i).line
	i++
	if i >= toks.len() || !ptxIdent(toks.at(i).s) {
		line := at
		if i < toks.len() {
			line = toks.at(i).line
		}
		return Entry{}, 0, ptxErrorf(line, InvalidPTX, ".entry has no name")
	}
	e := Entry{Name: toks.at(i).s}
	i++
	if i < toks.len() && toks.at(i).s == "(" {
		end := indexOf(toks.slice(i, toks.len()), ")", "{")
		if end < 0 {
			return Entry{}, 0, ptxErrorf(at, InvalidPTX, ".entry %s: parameter list without its closing parenthesis", e.Name)
		}
		from := len(*sizes)
		space, err := ptxParams(toks.slice(i+1, i+end), sizes)
		if err != nil {
			return Entry{}, 0, ptxErrorf(at, InvalidPTX, ".entry %s: %v", e.Name, err)
		}
		if space > h.paramSpace {
			return Entry{}, 0, ptxErrorf(at, InvalidPTX, ".entry %s uses too much parameter space: %d B, %d B at most at .version %s, .target %s", e.Name, space, h.paramSpace, h.version, h.target)
		}
		if len(*sizes) > from {
			e.Params = (*sizes)[from:len(*sizes):len(*sizes)]
		}
		i += end + 1
	}
	// Performance directives (.maxntid 256, 1, 1; .reqntid ...) may come
	// before the body.
	for i < toks.len() && toks.at(i).s != "{" {
		if t := toks.at(i).s; t == ";" || t == "}" || t == ".entry" {
			return Entry{}, 0, ptxErrorf(toks.at(i).line, InvalidPTX, ".entry %s has no body", e.Name)
		}
		i++
	}
	if i >= toks.len() {
		return Entry{}, 0, ptxErrorf(toks.at(toks.len()-1).line, InvalidPTX, ".entry %s has no body", e.Name)
	}
	return e, i, nil
}

// ptxIdent reports whether s is a PTX identifier.
func ptxIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		switch {
		case letter:
		case r == '_' || r == '$' || r == '%':
			if i == 0 && len(s) == 1 {
				return false
			}
		case r >= '0' && r <= '9':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// indexOf is the index of the first want in toks before any stop, or -1.
func indexOf(toks ptxToks, want, stop string) int {
	for i := range toks.len() {
		t := toks.at(i)
		switch t.s {
		case want:
			return i
		case stop:
			return -1
		}
	}
	return -1
}
