package ptx

import (
	"math"
	"strings"
)

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
