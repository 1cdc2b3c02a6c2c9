package plan

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/cudapool/cudapool/internal/checked"
)

// ReadCSV reads buffers in the CSV format of MiniMalloc's benchmarks: a
// header naming the columns id, lower, upper and size (in any order, an
// alignment column optional), then one buffer a row, alive over the
// half-open range of steps [lower, upper). Sizes and alignments are in
// units of unit bytes; unit 256 maps a problem stated in units onto the
// pool's 256-byte alignment exactly. The requests come back in row order,
// with First lower and Last upper-1. A UTF-8 byte-order mark before the
// header, which spreadsheets write, is skipped.
//
// Every error about the content wraps ErrTrace and names the line.
func ReadCSV(r io.Reader, unit uint64) ([]Request, error) {
	if unit == 0 {
		return nil, failf(ErrInvalidRequest, "CSV unit is zero")
	}
	cr := csv.NewReader(skipBOM(r))
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, csvError(err)
	}
	cols, err := csvColumns(head)
	if err != nil {
		return nil, fmt.Errorf("%w: line 1: %w", ErrTrace, err)
	}
	var reqs []Request
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return reqs, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		req, err := cols.request(rec, unit)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrTrace, line, err)
		}
		reqs = append(reqs, req)
	}
}

// skipBOM returns r without the UTF-8 byte-order mark it may start with.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if head, err := br.Peek(len(bom)); err == nil && string(head) == bom {
		_, _ = br.Discard(len(bom))
	}
	return br
}

// bom is the UTF-8 encoding of U+FEFF, the byte-order mark.
const bom = "\ufeff"

// csvCols holds the position of each known column; alignment is -1 when
// absent.
type csvCols struct{ id, lower, upper, size, alignment int }

func csvColumns(head []string) (csvCols, error) {
	c := csvCols{-1, -1, -1, -1, -1}
	for i, name := range head {
		var at *int
		switch strings.TrimSpace(name) {
		case "id":
			at = &c.id
		case "lower":
			at = &c.lower
		case "upper":
			at = &c.upper
		case "size":
			at = &c.size
		case "alignment":
			at = &c.alignment
		default:
			return c, fmt.Errorf("unknown column %q (want id, lower, upper, size and optionally alignment)", name)
		}
		if *at >= 0 {
			return c, fmt.Errorf("column %q appears twice", name)
		}
		*at = i
	}
	for name, at := range map[string]int{"id": c.id, "lower": c.lower, "upper": c.upper, "size": c.size} {
		if at < 0 {
			return c, fmt.Errorf("missing column %q", name)
		}
	}
	return c, nil
}

func (c csvCols) request(rec []string, unit uint64) (Request, error) {
	field := func(name string, at int) (uint64, error) {
		text := strings.TrimSpace(rec[at])
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s (%q) is not a whole number below 2^64", name, text)
		}
		return v, nil
	}
	if _, err := field("id", c.id); err != nil {
		return Request{}, err
	}
	lower, err := field("lower", c.lower)
	if err != nil {
		return Request{}, err
	}
	upper, err := field("upper", c.upper)
	if err != nil {
		return Request{}, err
	}
	if upper <= lower {
		return Request{}, fmt.Errorf("upper (%d) is not above lower (%d)", upper, lower)
	}
	if upper > math.MaxInt {
		return Request{}, fmt.Errorf("upper (%d) does not fit in an int", upper)
	}
	req := Request{First: int(lower), Last: int(upper - 1)}
	size, err := field("size", c.size)
	if err != nil {
		return Request{}, err
	}
	if req.Size, err = scaled("size", size, unit); err != nil {
		return Request{}, err
	}
	if c.alignment >= 0 {
		a, err := field("alignment", c.alignment)
		if err != nil {
			return Request{}, err
		}
		if req.Align, err = scaled("alignment", a, unit); err != nil {
			return Request{}, err
		}
	}
	if reason, _ := req.flaw(); reason != "" {
		return Request{}, errors.New(reason)
	}
	return req, nil
}

// scaled multiplies a count of units by the unit, refusing a product past
// 2^64.
func scaled(name string, v, unit uint64) (uint64, error) {
	p, ok := checked.Mul(v, unit)
	if !ok {
		return 0, fmt.Errorf("%s %d times unit %d overflows 64 bits", name, v, unit)
	}
	return p, nil
}

// csvError locates a reading error: encoding/csv's parse errors carry
// their line, other errors (the reader's own) are passed on.
func csvError(err error) error {
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%w: line %d: %w", ErrTrace, pe.Line, pe.Err)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: line 1: missing header id,lower,upper,size", ErrTrace)
	}
	return fmt.Errorf("plan: reading CSV: %w", err)
}
