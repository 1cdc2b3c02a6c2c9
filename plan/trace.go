package plan

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Trace is the buffer lifetimes of one recorded forward pass, in the format
// of the traces in testdata/traces: the activation tensors a graph
// produces, each with the first and last op that touches it.
type Trace struct {
	// Model names the graph, for titles and reports.
	Model string
	// Ops is the number of ops in the pass; every tensor's Last is below it.
	Ops int
	// Tensors are the buffers to plan, in the trace's order, Align zero.
	Tensors []Request
	// TorchPeakAllocated and TorchPeakReserved are what PyTorch's caching
	// allocator needed for the same pass, for comparison; zero if absent.
	TorchPeakAllocated, TorchPeakReserved uint64
}

// traceJSON mirrors the file with numbers kept as raw text, so that a
// missing field, a string, a negative or a fractional number can each be
// told apart from a zero and reported with the tensor's index.
type traceJSON struct {
	Model              string          `json:"model"`
	Ops                json.RawMessage `json:"ops"`
	Tensors            *[]tensorJSON   `json:"tensors"`
	TorchPeakAllocated json.RawMessage `json:"torch_peak_allocated_bytes"`
	TorchPeakReserved  json.RawMessage `json:"torch_peak_reserved_bytes"`
}

type tensorJSON struct {
	Size  json.RawMessage `json:"size"`
	First json.RawMessage `json:"first"`
	Last  json.RawMessage `json:"last"`
}

// ReadTrace reads one trace. Every error wraps ErrTrace and says where the
// problem is: the line, column and byte offset of a JSON error, or the index
// of the tensor that is wrong.
func ReadTrace(r io.Reader) (*Trace, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("plan: read trace: %w", err)
	}
	var raw traceJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, jsonError(data, err)
	}
	t := &Trace{Model: raw.Model}
	if t.Ops, err = intField("ops", raw.Ops); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	if t.TorchPeakAllocated, err = optionalBytes("torch_peak_allocated_bytes", raw.TorchPeakAllocated); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	if t.TorchPeakReserved, err = optionalBytes("torch_peak_reserved_bytes", raw.TorchPeakReserved); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	if raw.Tensors == nil {
		return nil, fmt.Errorf("%w: missing \"tensors\"", ErrTrace)
	}
	t.Tensors = make([]Request, len(*raw.Tensors))
	for i, tj := range *raw.Tensors {
		req, err := tj.request(t.Ops)
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %d: %w", ErrTrace, i, err)
		}
		t.Tensors[i] = req
	}
	return t, nil
}

// request converts one tensor, checking it against the trace's op count.
func (tj tensorJSON) request(ops int) (Request, error) {
	var req Request
	var err error
	if req.Size, err = byteCount("size", tj.Size); err != nil {
		return req, err
	}
	if req.First, err = intField("first", tj.First); err != nil {
		return req, err
	}
	if req.Last, err = intField("last", tj.Last); err != nil {
		return req, err
	}
	if reason, _ := req.flaw(); reason != "" {
		return req, errors.New(reason)
	}
	if req.Last >= ops {
		return req, fmt.Errorf("last (%d) is not below ops (%d)", req.Last, ops)
	}
	return req, nil
}

// number returns a field's JSON number text, refusing a missing field or a
// value of another kind.
func number(name string, raw json.RawMessage) (string, error) {
	text := string(raw)
	switch {
	case raw == nil || text == "null":
		return "", fmt.Errorf("missing %q", name)
	case strings.ContainsAny(text[:1], "-0123456789"):
		return text, nil
	}
	return "", fmt.Errorf("%s (%s) is not a number", name, text)
}

// intField parses a step or op count: a non-negative integer that fits in
// an int.
func intField(name string, raw json.RawMessage) (int, error) {
	text, err := number(name, raw)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(text, 10, 0)
	switch {
	case err == nil && v < 0:
		return 0, fmt.Errorf("%s (%s) is negative", name, text)
	case err != nil:
		return 0, fmt.Errorf("%s (%s) is not an integer that fits in %d bits", name, text, strconv.IntSize)
	}
	return int(v), nil
}

// byteCount parses a size: an integer from 0 to 2^64-1.
func byteCount(name string, raw json.RawMessage) (uint64, error) {
	text, err := number(name, raw)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(text, 10, 64)
	switch {
	case err == nil:
		return v, nil
	case strings.HasPrefix(text, "-"):
		return 0, fmt.Errorf("%s (%s) is negative", name, text)
	}
	return 0, fmt.Errorf("%s (%s) is not a whole number of bytes below 2^64", name, text)
}

// optionalBytes is byteCount for a field that may be absent.
func optionalBytes(name string, raw json.RawMessage) (uint64, error) {
	if raw == nil {
		return 0, nil
	}
	return byteCount(name, raw)
}

// jsonError turns a decoding error into one that points at the line and
// column, which is what an editor needs, besides the byte offset.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included; at the
		// end of the input there is no offending byte.
		at := syn.Offset
		if at > 0 && !strings.Contains(syn.Error(), "end of JSON input") {
			at--
		}
		return fmt.Errorf("%w: %s: %w", ErrTrace, position(data, at), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%w: %s: %s is %s, want %s", ErrTrace, position(data, typ.Offset),
			cmp.Or(typ.Field, "the trace"), article(typ.Value), article(jsonKind(typ.Type)))
	}
	return fmt.Errorf("%w: %w", ErrTrace, err)
}

// position describes a byte offset as line and column, both from 1.
func position(data []byte, offset int64) string {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d (byte %d)", line, col, offset)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.String:
		return "string"
	}
	return t.Kind().String()
}

func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
