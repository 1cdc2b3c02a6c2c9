package enum

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type color int8

func (c color) String() string { return colors.Name(c) }

var colors = Table[color]{Prefix: "Color", Names: []string{0: "Red", 2: "Blue"}, Unknown: "color(%d)"}

type mode uint32

var modes = Table[mode]{Names: []string{1: "ON"}, Unknown: "mode(0x%x)"}

func TestName(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"first", colors.Name(0), "ColorRed"},
		{"sparse", colors.Name(2), "ColorBlue"},
		{"gap", colors.Name(1), "color(1)"},
		{"past the end", colors.Name(3), "color(3)"},
		{"negative", colors.Name(-1), "color(-1)"},
		{"through String", color(-128).String(), "color(-128)"},
		{"no prefix", modes.Name(1), "ON"},
		{"hex", modes.Name(0), "mode(0x0)"},
		{"largest unsigned", modes.Name(1<<32 - 1), "mode(0xffffffff)"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}
