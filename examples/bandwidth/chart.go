package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Geometry of the chart, in SVG user units (pixels).
const (
	chartWidth = 960
	labelWidth = 330 // left column: the source names
	plotWidth  = 540
	barHeight  = 16
	barGap     = 3
	groupGap   = 14
	titleSpace = 46 // a panel's title and legend
	axisSpace  = 34 // a panel's tick labels and axis title
	panelGap   = 24
)

// series is one bar of every group: its legend and colour.
type series struct {
	name, color string
}

// panel is one bar chart: a group of bars per row.
type panel struct {
	title, unit string
	series      []series
	rows        []string
	values      [][]float64 // [row][series]
}

// chart draws the copy bandwidths and the pin and free times as two
// horizontal bar charts in one SVG document.
func chart(results []result, c config) []byte {
	bw := panel{
		title:  fmt.Sprintf("Copy bandwidth, %s per copy (higher is better)", humanize.IBytes(c.size)),
		unit:   "GB/s",
		series: []series{{"host to device", "#1f77b4"}, {"device to host", "#ff7f0e"}},
	}
	var longest time.Duration
	for _, r := range results {
		bw.rows = append(bw.rows, r.label())
		bw.values = append(bw.values, []float64{r.h2d, r.d2h})
		longest = max(longest, r.pin, r.free)
	}
	div, unit := timeUnit(longest)
	pin := panel{
		title:  fmt.Sprintf("Time to pin and to free %s (lower is better)", humanize.IBytes(c.pinSize)),
		unit:   unit,
		series: []series{{"pin", "#2ca02c"}, {"free", "#d62728"}},
	}
	for _, r := range results {
		if r.pinned {
			pin.rows = append(pin.rows, r.label())
			pin.values = append(pin.values, []float64{r.pin.Seconds() / div, r.free.Seconds() / div})
		}
	}

	var body bytes.Buffer
	y := 10.0
	for _, p := range []panel{bw, pin} {
		y = p.draw(&body, y) + panelGap
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, y, chartWidth, y)
	fmt.Fprintf(&out, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	out.Write(body.Bytes())
	out.WriteString("</svg>\n")
	return out.Bytes()
}

// label names the row, and says so when a method fell back to another.
func (r result) label() string {
	if strings.HasSuffix(r.via, "(fallback)") {
		return r.name + " [fell back]"
	}
	return r.name
}

// timeUnit picks the unit that keeps the longest time readable: the divisor
// from seconds and its name.
func timeUnit(longest time.Duration) (float64, string) {
	switch {
	case longest >= time.Second:
		return 1, "s"
	case longest >= time.Millisecond:
		return 1e-3, "ms"
	}
	return 1e-6, "µs"
}

// draw writes the panel with its top at y and returns where it ends.
func (p panel) draw(w *bytes.Buffer, y float64) float64 {
	fmt.Fprintf(w, `<text x="10" y="%.1f" font-size="15" font-weight="bold">%s</text>`+"\n", y+16, esc(p.title))
	for i, s := range p.series {
		x := float64(labelWidth + i*160)
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", x, y+26, s.color)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+17, y+36, esc(s.name))
	}
	top := y + titleSpace
	group := float64(len(p.series)*(barHeight+barGap)) + groupGap
	bottom := top + group*float64(len(p.rows))
	scale, step := axis(p.values)

	for v := 0.0; v <= scale+step/2; v += step {
		x := labelWidth + v/scale*plotWidth
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+14, tick(v, step))
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", labelWidth+plotWidth/2.0, bottom+30, esc(p.unit))

	for i, row := range p.rows {
		gy := top + group*float64(i)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", labelWidth-8, gy+barHeight+2, esc(row))
		for j, s := range p.series {
			v := p.values[i][j]
			by := gy + float64(j*(barHeight+barGap))
			width := v / scale * plotWidth
			fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: %s %s</title></rect>`+"\n",
				labelWidth, by, width, barHeight, s.color, esc(row+", "+s.name), value(v), esc(p.unit))
			fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s %s</text>`+"\n", labelWidth+width+4, by+barHeight-4, value(v), esc(p.unit))
		}
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", labelWidth, top, labelWidth, bottom)
	return bottom + axisSpace
}

// axis picks the scale's end and the distance between ticks: about five
// ticks at 1, 2 or 5 times a power of ten, past the largest value.
func axis(values [][]float64) (scale, step float64) {
	top := 0.0
	for _, row := range values {
		for _, v := range row {
			top = max(top, v)
		}
	}
	if top <= 0 {
		return 1, 0.2
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return math.Ceil(top/step) * step, step
}

func tick(v, step float64) string {
	if step >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	decimals := int(math.Ceil(-math.Log10(step)))
	return fmt.Sprintf("%.*f", decimals, v)
}

func value(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string { return html.EscapeString(s) }
