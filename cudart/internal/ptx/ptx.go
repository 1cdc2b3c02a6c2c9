// Package ptx reads the kernel entry points of PTX text and checks a launch
// against them, before CUDA sees it, and refuses what the driver's JIT
// refuses of the parts it reads: the binding in cudart and the fake in
// cudarttest check modules and launches the same way. It is not part of a
// user's API.
package ptx

import (
	"errors"
	"fmt"
	"math"
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

// The codes the JIT refuses text with: text that does not begin with a
// .version directive is no PTX to the driver (CUDA_ERROR_INVALID_IMAGE);
// PTX that does not parse fails to compile (CUDA_ERROR_INVALID_PTX).
const (
	NotPTX     = 200
	InvalidPTX = 218
)

// ptxError is text Parse refuses, at a line, as the JIT would.
type ptxError struct {
	line int
	msg  string
	code int // NotPTX or InvalidPTX
}

func (e *ptxError) Error() string { return fmt.Sprintf("cudart: PTX line %d: %s", e.line, e.msg) }

// JITCode is the CUDA code the driver refuses PTX with for err, an error of
// Parse: NotPTX for text that is not PTX at all, InvalidPTX otherwise.
func JITCode(err error) int {
	var e *ptxError
	if errors.As(err, &e) {
		return e.code
	}
	return InvalidPTX
}

func ptxErrorf(line int, code int, format string, args ...any) error {
	return &ptxError{line: line, msg: fmt.Sprintf(format, args...), code: code}
}

// ptxTargets are the architectures a .target may name (sm_NN, with an a or
// f suffix for the feature sets of the newer ones), as the JIT of CUDA 13
// knows them; it refuses others ("Unsupported .target").
var ptxTargets = map[string]bool{
	"20": true, "21": true, "30": true, "32": true, "35": true, "37": true, "50": true, "52": true, "53": true,
	"60": true, "61": true, "62": true, "70": true, "72": true, "73": true, "75": true, "80": true, "86": true,
	"87": true, "88": true, "89": true, "90": true, "100": true, "101": true, "103": true, "110": true,
	"120": true, "121": true,
}

// ptxTargetOptions are the other words a .target list may hold.
var ptxTargetOptions = map[string]bool{"texmode_unified": true, "texmode_independent": true, "map_f64_to_f32": true, "debug": true}

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

// header is what Parse reads of the directives PTX begins with.
type header struct {
	version string // major.minor, as written
	target  string // the architecture, as written
	// paramSpace is the most bytes an entry's parameters may take.
	paramSpace uint64
}

// ptxHeader checks the .version, .target and optional .address_size
// directives PTX begins with, and returns them and the index of the token
// after them.
func ptxHeader(toks ptxToks) (header, int, error) {
	var h header
	if toks.len() == 0 {
		return h, 0, ptxErrorf(1, NotPTX, "no PTX: the text is empty")
	}
	if toks.at(0).s != ".version" {
		return h, 0, ptxErrorf(toks.at(0).line, NotPTX, "no PTX: it starts with %q, not .version", toks.at(0).s)
	}
	if toks.len() < 2 || toks.at(1).line != toks.at(0).line || !ptxVersion(toks.at(1).s) {
		return h, 0, ptxErrorf(toks.at(0).line, InvalidPTX, ".version wants major.minor, e.g. .version 8.0")
	}
	h.version = toks.at(1).s
	i := 2
	if i >= toks.len() || toks.at(i).s != ".target" {
		return h, 0, ptxErrorf(toks.at(1).line+1, InvalidPTX, "missing .target after .version")
	}
	line := toks.at(i).line
	i++
	debugInfo := -1 // whether toks have debug information, once asked
	for first := true; ; first = false {
		if i >= toks.len() || toks.at(i).line != line {
			return h, 0, ptxErrorf(line, InvalidPTX, ".target names no architecture")
		}
		name := toks.at(i).s
		arch, isSM := strings.CutPrefix(name, "sm_")
		arch = strings.TrimRight(arch, "af")
		if name == "debug" && debugInfo < 0 {
			debugInfo = 0
			if ptxHasDebugInfo(toks) {
				debugInfo = 1
			}
		}
		switch {
		case isSM && ptxTargets[arch]:
			if first {
				h.target = name
			}
		case !first && name == "debug" && debugInfo == 0:
			return h, 0, ptxErrorf(line, InvalidPTX, ".target debug without debug information (.section .debug_*)")
		case !first && ptxTargetOptions[name]:
		default:
			return h, 0, ptxErrorf(line, InvalidPTX, "unsupported .target %q", name)
		}
		i++
		if i >= toks.len() || toks.at(i).s != "," || toks.at(i).line != line {
			break
		}
		i++
	}
	if i < toks.len() && toks.at(i).s == ".address_size" {
		if i+1 >= toks.len() || toks.at(i+1).line != toks.at(i).line || (toks.at(i+1).s != "32" && toks.at(i+1).s != "64") {
			return h, 0, ptxErrorf(toks.at(i).line, InvalidPTX, ".address_size wants 32 or 64")
		}
		i += 2
	}
	h.paramSpace = ParamSpace(h.version, h.target)
	return h, i, nil
}

// ParamSpace is the most bytes the parameters of one .entry may take, with
// the padding their alignment puts between them, for PTX of version (as
// .version writes it, e.g. "8.0") and architecture target ("sm_80"): 32,764
// B from PTX ISA 8.1 on sm_70 and later, as CUDA 12.1 raised it, and 4,352
// B (0x1100) otherwise. The JIT refuses more with CUDA_ERROR_INVALID_PTX,
// "too much parameter space": 4,360 B, 32,764 B and 32,768 B at .version
// 8.0 on an H200 with CUDA 13.0.
func ParamSpace(version, target string) uint64 {
	major, minor, _ := strings.Cut(version, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	sm, _ := strconv.Atoi(strings.TrimRight(strings.TrimPrefix(target, "sm_"), "af"))
	if (ma > 8 || ma == 8 && mi >= 1) && sm >= 70 {
		return 32764
	}
	return 4352
}

// ptxHasDebugInfo reports whether toks have a debug section.
func ptxHasDebugInfo(toks ptxToks) bool {
	for i := 0; i+1 < toks.len(); i++ {
		if toks.at(i).s == ".section" && strings.HasPrefix(toks.at(i+1).s, ".debug") {
			return true
		}
	}
	return false
}

// ptxVersion reports whether v is major.minor.
func ptxVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	return ok && ptxDigits(major) && ptxDigits(minor)
}

func ptxDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

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

// ptxTok is a word or punctuation mark of PTX, as ptxToks.at gives it.
type ptxTok struct {
	s    string
	line int
}

// ptxToks are the tokens of a PTX text: the offsets of each in the text and
// its line. They hold no pointer, so a text of millions of tokens costs the
// garbage collector nothing to scan.
type ptxToks struct {
	src  string
	toks []ptxSpan
}

// ptxSpan is a token: src[start:end], on line. 32 bits each, as texts are
// under 4 GiB: half the memory a token would take otherwise.
type ptxSpan struct{ start, end, line uint32 }

func (t ptxToks) len() int { return len(t.toks) }

// at is token i.
func (t ptxToks) at(i int) ptxTok {
	s := t.toks[i]
	return ptxTok{t.src[s.start:s.end], int(s.line)}
}

// slice is tokens lo to hi, hi excluded.
func (t ptxToks) slice(lo, hi int) ptxToks { return ptxToks{t.src, t.toks[lo:hi]} }

// ptxTokens splits ptx into words and the punctuation Parse reads,
// without comments, each with its line number. A block comment that is not
// closed is refused, as the JIT refuses it, at the line it opens.
func ptxTokens(ptx string) (ptxToks, error) {
	if uint64(len(ptx)) > math.MaxUint32 {
		return ptxToks{}, ptxErrorf(1, InvalidPTX, "%d B of text: the parser reads up to 4 GiB", len(ptx))
	}
	toks := make([]ptxSpan, 0, ptxCountTokens(ptx))
	line, start := uint32(1), -1
	word := func(end int) {
		if start >= 0 {
			toks = append(toks, ptxSpan{uint32(start), uint32(end), line})
			start = -1
		}
	}
	for i := 0; i < len(ptx); i++ {
		c := ptx[i]
		switch class := ptxClass[c]; {
		case c == '/' && i+1 < len(ptx) && ptx[i+1] == '/':
			word(i)
			end := strings.IndexByte(ptx[i:], '\n')
			if end < 0 {
				return ptxToks{ptx, toks}, nil
			}
			i += end - 1
		case c == '/' && i+1 < len(ptx) && ptx[i+1] == '*':
			word(i)
			end := strings.Index(ptx[i+2:], "*/")
			if end < 0 {
				return ptxToks{}, ptxErrorf(int(line), InvalidPTX, "the block comment opened here is not closed")
			}
			line += uint32(strings.Count(ptx[i:i+2+end], "\n"))
			i += end + 3
		case c == '\n':
			word(i)
			line++
		case class == ptxSpace:
			word(i)
		case class == ptxPunct:
			word(i)
			toks = append(toks, ptxSpan{uint32(i), uint32(i + 1), line})
		case start < 0:
			start = i
		}
	}
	word(len(ptx))
	return ptxToks{ptx, toks}, nil
}

// ptxCountTokens bounds the tokens ptxTokens finds in ptx, comments
// counted as words: one allocation of that many costs less than the
// growths of a slice, each copying what came before.
func ptxCountTokens(ptx string) int {
	n, inWord := 0, false
	for i := 0; i < len(ptx); i++ {
		switch ptxClass[ptx[i]] {
		case ptxSpace:
			inWord = false
		case ptxPunct:
			n++
			inWord = false
		default:
			if !inWord {
				n++
				inWord = true
			}
		}
	}
	return n
}

// The classes of the bytes of PTX: a word's, white space, or punctuation
// that is a token of its own.
const (
	ptxWord = iota
	ptxSpace
	ptxPunct
)

// ptxClass is the class of each byte, looked up once a byte.
var ptxClass = func() (c [256]uint8) {
	for _, b := range []byte(" \t\n\r\v\f") {
		c[b] = ptxSpace
	}
	for _, b := range []byte("(),[]{};") {
		c[b] = ptxPunct
	}
	return c
}()
