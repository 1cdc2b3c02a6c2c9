package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/examples/cli/clitest"
)

func TestBandwidthOnTheFake(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "out.svg")
	text, stderr := clitest.OK(t, run, "-runtime=fake", "-size", "8MiB", "-pin-size", "16MiB", "-reps", "2", "-svg", svg)
	assert.Contains(t, text, "median of 2 (fake runtime: not a GPU timing)")
	assert.Contains(t, stderr, "bandwidth: [5/5] pinned HostAlloc (cudaHostAlloc): copy 8.0 MiB each way, 2 times\n", "progress on stderr")
	for _, s := range sources {
		assert.Contains(t, text, s.name)
	}
	for _, want := range []string{"pin 16 MiB", "H2D GB/s", "D2H GB/s", "pinned.MethodRegister ", "pinned.MethodRegisterNoHugePages", "pinned.MethodHostAlloc", "against cudaMallocHost", "copies of 8.0 MiB"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "fallback", "the fake registers memory: nothing falls back")

	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	requireWellFormedSVG(t, data)
	for _, want := range []string{"GB/s", "Copy bandwidth, 8.0 MiB per copy", "Time to pin and to free 16 MiB", "host to device", "device to host", "pinned RegisterNoHugePages"} {
		assert.Contains(t, string(data), want)
	}
}

// requireWellFormedSVG parses the whole document and checks its root.
func requireWellFormedSVG(t *testing.T, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && root == nil {
			root = &se
		}
	}
	require.NotNil(t, root)
	assert.Equal(t, "svg", root.Name.Local)
	assert.Equal(t, "http://www.w3.org/2000/svg", root.Name.Space)
}

func TestBandwidthRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-size", "0"},
		{"-size", "lots"},
		{"-pin-size", "-1MiB"},
		{"-reps", "0"},
		{"-runtime=fake", "extra"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"-runtime=fake"}, args...), &out, &errOut), "%q", args)
		assert.NotEmpty(t, errOut.String())
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-runtime=nonsense", "-size", "1MiB"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unknown runtime")
}

func TestChartEscapesAndScales(t *testing.T) {
	results := []result{
		{source: source{name: "Go & <friends>"}, via: "-", h2d: 8.4, d2h: 14.8},
		{source: source{name: "cudaMallocHost", pinned: true}, via: "cudaMallocHost", pin: 2080 * time.Millisecond, free: 470 * time.Millisecond, h2d: 55.3, d2h: 55.3},
		{source: source{name: "pinned Register", pinned: true}, via: "pinned.MethodHostAlloc (fallback)", pin: 160 * time.Millisecond, free: 80 * time.Millisecond, h2d: 55.4, d2h: 55.4},
	}
	data := chart(results, config{size: 1 << 30, pinSize: 4 << 30})
	requireWellFormedSVG(t, data)
	s := string(data)
	assert.Contains(t, s, "Go &amp; &lt;friends&gt;")
	assert.Contains(t, s, "pinned Register [fell back]")
	assert.Contains(t, s, ">2.08 s<", "times over a second are drawn in seconds")
	assert.Contains(t, s, ">60<", "the bandwidth axis ends at a round number past 55.4")
	assert.Equal(t, 2, strings.Count(s, "Time to pin")+strings.Count(s, "Copy bandwidth"))
}

func TestAxis(t *testing.T) {
	for _, c := range []struct{ top, scale, step float64 }{
		{55.4, 60, 20}, {9, 10, 2}, {0.0021, 0.0025, 0.0005}, {100, 100, 20}, {0, 1, 0.2},
	} {
		scale, step := axis([][]float64{{c.top}})
		assert.InDelta(t, c.scale, scale, 1e-12, "top %v", c.top)
		assert.InDelta(t, c.step, step, 1e-12, "top %v", c.top)
	}
}

func TestFillIsCheckedByFilled(t *testing.T) {
	b := make([]byte, 3*period+17)
	fill(b)
	require.True(t, filled(b))
	b[2*period+5]++
	require.False(t, filled(b))
	shifted := make([]byte, len(b))
	fill(shifted)
	copy(shifted, shifted[4096:])
	require.False(t, filled(shifted), "a copy off by a page must not pass")
}

// -h says what the program does, then lists the flags, and is no error.
func TestHelp(t *testing.T) { clitest.Help(t, run, about, "-runtime") }
