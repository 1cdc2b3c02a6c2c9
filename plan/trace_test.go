package plan_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

func TestReadTrace(t *testing.T) {
	tr, err := plan.ReadTrace(strings.NewReader(`{"model": "tiny", "ops": 3,
		"tensors": [{"size": 1000, "first": 0, "last": 1}, {"size": 24, "first": 1, "last": 2}],
		"torch_peak_allocated_bytes": 2048, "torch_peak_reserved_bytes": 2097152, "extra": true}`))
	require.NoError(t, err)
	assert.Equal(t, &plan.Trace{
		Model: "tiny",
		Ops:   3,
		Tensors: []plan.Request{
			{Size: 1000, First: 0, Last: 1},
			{Size: 24, First: 1, Last: 2},
		},
		TorchPeakAllocated: 2048,
		TorchPeakReserved:  2097152,
	}, tr)
}

func TestReadTraceRefuses(t *testing.T) {
	tests := []struct {
		name, in, message string
	}{
		{"empty", ``, "line 1, column 1 (byte 0): unexpected end of JSON input"},
		{"not JSON", `model: resnet`, "line 1, column 1 (byte 0): invalid character 'm'"},
		{"truncated", "{\"ops\": 3,\n \"tensors\": [{\"size\": 1", "line 2, column 24 (byte 34): unexpected end of JSON input"},
		{"syntax error on line 3", "{\"ops\": 3,\n\"tensors\": [\n{\"size\": 1,, \"first\": 0}]}", "line 3, column 12 (byte 35): invalid character ','"},
		{"trailing data", `{"ops": 1, "tensors": []} {}`, "after top-level value"},
		{"tensors not an array", `{"ops": 1, "tensors": 5}`, "line 1, column 24 (byte 23): tensors is a number, want an array"},
		{"size a string", `{"ops": 1, "tensors": [{"size": "big", "first": 0, "last": 0}]}`, "tensor 0: size (\"big\") is not a number"},
		{"not an object", `[1, 2]`, "the trace is an array, want an object"},
		{"missing ops", `{"tensors": []}`, `missing "ops"`},
		{"missing tensors", `{"ops": 4}`, `missing "tensors"`},
		{"null ops", `{"ops": null, "tensors": []}`, `missing "ops"`},
		{"ops a float", `{"ops": 1e3, "tensors": []}`, "ops (1e3) is not an integer"},
		{"negative ops", `{"ops": -1, "tensors": []}`, "ops (-1) is negative"},
		{"negative size", `{"ops": 9, "tensors": [{"size": 5, "first": 0, "last": 0}, {"size": -5, "first": 0, "last": 0}]}`, "tensor 1: size (-5) is negative"},
		{"fractional size", `{"ops": 9, "tensors": [{"size": 1.5, "first": 0, "last": 0}]}`, "tensor 0: size (1.5) is not a whole number"},
		{"size past 2^64", `{"ops": 9, "tensors": [{"size": 18446744073709551616, "first": 0, "last": 0}]}`, "tensor 0: size (18446744073709551616)"},
		{"zero size", `{"ops": 9, "tensors": [{"size": 0, "first": 0, "last": 0}]}`, "tensor 0: size is zero"},
		{"last before first", `{"ops": 9, "tensors": [{"size": 1, "first": 5, "last": 3}]}`, "tensor 0: last (3) < first (5)"},
		{"negative first", `{"ops": 9, "tensors": [{"size": 1, "first": -2, "last": 3}]}`, "tensor 0: first (-2) is negative"},
		{"missing last", `{"ops": 9, "tensors": [{"size": 1, "first": 2}]}`, `tensor 0: missing "last"`},
		{"missing size", `{"ops": 9, "tensors": [{"first": 2, "last": 2}]}`, `tensor 0: missing "size"`},
		{"last past ops", `{"ops": 9, "tensors": [{"size": 1, "first": 2, "last": 9}]}`, "tensor 0: last (9) is not below ops (9)"},
		{"bad torch peak", `{"ops": 1, "tensors": [], "torch_peak_reserved_bytes": -1}`, "torch_peak_reserved_bytes (-1) is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := plan.ReadTrace(strings.NewReader(tt.in))
			require.Error(t, err)
			assert.Nil(t, tr)
			assert.ErrorIs(t, err, plan.ErrTrace)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}

func TestReadTraceReaderError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := plan.ReadTrace(iotest.ErrReader(boom))
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, plan.ErrTrace)
}
