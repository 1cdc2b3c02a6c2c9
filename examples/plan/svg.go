package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/plan"
)

// The drawing's geometry, in SVG user units (pixels).
const (
	svgWidth, svgHeight     = 1200, 720
	marginLeft, marginRight = 90, 30
	marginTop, marginBottom = 60, 60
	plotWidth               = svgWidth - marginLeft - marginRight
	plotHeight              = svgHeight - marginTop - marginBottom
)

// writeSVG draws the plan to path: steps left to right, offsets bottom to
// top, one rectangle per buffer spanning its lifetime and its bytes, with
// the lower bound as a dashed line, so that wasted space shows as white
// above the line and good sharing as a tightly packed band below it.
func writeSVG(path string, tr *plan.Trace, res *plan.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := drawPlan(w, tr, res); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// canvas maps steps and bytes to drawing coordinates. Steps are counted
// in uint64, where the step after math.MaxInt fits.
type canvas struct {
	steps uint64
	bytes uint64
}

func (c canvas) x(step uint64) float64 {
	return marginLeft + float64(step)/float64(c.steps)*plotWidth
}

func (c canvas) y(offset uint64) float64 {
	return marginTop + plotHeight - float64(offset)/float64(c.bytes)*plotHeight
}

func drawPlan(w io.Writer, tr *plan.Trace, res *plan.Result) error {
	steps := uint64(tr.Ops)
	for _, t := range tr.Tensors {
		steps = max(steps, uint64(t.Last)+1)
	}
	c := canvas{steps: max(steps, 1), bytes: max(res.ArenaBytes, 1)}
	p := &printer{w: w}
	p.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	p.printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p.printf(`<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", marginLeft, escape(title(tr, res)))
	p.printf(`<text x="%d" y="46" fill="#555">%s</text>`+"\n", marginLeft, escape(subtitle(tr, res)))
	drawGrid(p, c)
	drawBuffers(p, c, tr, res)
	drawAxes(p, c)
	drawLowerBound(p, c, res.LowerBound)
	p.printf("</svg>\n")
	return p.err
}

func title(tr *plan.Trace, res *plan.Result) string {
	model := tr.Model
	if model == "" {
		model = "trace"
	}
	return fmt.Sprintf("%s: arena / lower bound = %s", model, ratio(float64(res.ArenaBytes), res.LowerBound))
}

func subtitle(tr *plan.Trace, res *plan.Result) string {
	return fmt.Sprintf("%d buffers over %d ops; arena %s, lower bound %s",
		len(tr.Tensors), tr.Ops, humanize.IBytes(res.ArenaBytes), humanize.IBytes(res.LowerBound))
}

// drawBuffers draws one rectangle per buffer, with a tooltip naming it.
// Colours step around the hue circle by the golden angle so that
// neighbours in the trace differ.
func drawBuffers(p *printer, c canvas, tr *plan.Trace, res *plan.Result) {
	p.printf(`<g stroke="#333" stroke-width="0.3">` + "\n")
	for i, t := range tr.Tensors {
		fp, _ := t.Footprint()
		off := res.Offsets[i]
		x0, x1 := c.x(uint64(t.First)), c.x(uint64(t.Last)+1)
		y0, y1 := c.y(off+fp), c.y(off)
		hue := math.Mod(float64(i)*137.508, 360)
		p.printf(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="hsl(%.0f,65%%,62%%)">`+
			`<title>tensor %d: %s, steps %d..%d, offset %s</title></rect>`+"\n",
			x0, y0, max(x1-x0, 0.5), max(y1-y0, 0.5), hue,
			i, humanize.IBytes(t.Size), t.First, t.Last, humanize.IBytes(off))
	}
	p.printf("</g>\n")
}

// drawAxes draws both axes with ticks: steps on a 1-2-5 scale, bytes on
// powers of two so the labels read as round binary sizes.
func drawAxes(p *printer, c canvas) {
	bottom, left := c.y(0), c.x(0)
	p.printf(`<g stroke="black" stroke-width="1">`+
		`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f"/><line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f"/></g>`+"\n",
		left, bottom, c.x(c.steps), bottom, left, bottom, left, c.y(c.bytes))
	tick := stepTick(c.steps)
	for k := range c.steps/tick + 1 {
		s := k * tick
		x := c.x(s)
		p.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="black"/>`+
			`<text x="%.2f" y="%.2f" text-anchor="middle">%d</text>`+"\n",
			x, bottom, x, bottom+5, x, bottom+19, s)
	}
	for _, b := range byteTicks(c.bytes) {
		y := c.y(b)
		p.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="black"/>`+
			`<text x="%.2f" y="%.2f" text-anchor="end">%s</text>`+"\n",
			left-5, y, left, y, left-8, y+4, humanize.IBytes(b))
	}
	p.printf(`<text x="%.2f" y="%d" text-anchor="middle">step (op index)</text>`+"\n", c.x(c.steps/2), svgHeight-15)
	p.printf(`<text transform="translate(20 %.2f) rotate(-90)" text-anchor="middle">offset in the arena</text>`+"\n",
		marginTop+plotHeight/2.0)
}

// drawGrid draws light lines at the byte ticks, under the buffers.
func drawGrid(p *printer, c canvas) {
	p.printf(`<g stroke="#e4e4e4">`)
	for _, b := range byteTicks(c.bytes) {
		p.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f"/>`, c.x(0), c.y(b), c.x(c.steps), c.y(b))
	}
	p.printf("</g>\n")
}

func drawLowerBound(p *printer, c canvas, lb uint64) {
	y := c.y(lb)
	p.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="crimson" stroke-width="1.5" stroke-dasharray="6 4"/>`+
		`<text x="%.2f" y="%.2f" fill="crimson" text-anchor="end">lower bound %s</text>`+"\n",
		c.x(0), y, c.x(c.steps), y, c.x(c.steps), y-5, humanize.IBytes(lb))
}

// stepTick returns the least step on a 1-2-5 scale that gives at most
// about 12 ticks, fewer when the labels are long, so that they never
// overlap, however many steps there are: 19-digit labels get 7.
func stepTick(steps uint64) uint64 {
	label := len(strconv.FormatUint(steps, 10))*7 + 12
	most := uint64(min(12, plotWidth/label))
	for mag := uint64(1); ; mag *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			tick, ok := mul(m, mag)
			if !ok {
				return math.MaxUint64
			}
			if steps/tick <= most {
				return tick
			}
		}
	}
}

// byteTicks returns the multiples, up to bytes, of the power of two that
// gives 4 to 8 of them.
func byteTicks(bytes uint64) []uint64 {
	tick := uint64(1)
	for bytes/tick > 8 {
		tick *= 2
	}
	ticks := make([]uint64, 0, bytes/tick+1)
	for k := range bytes/tick + 1 {
		ticks = append(ticks, k*tick)
	}
	return ticks
}

func escape(s string) string {
	var b strings.Builder
	// Writing to a strings.Builder cannot fail.
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// printer remembers the first write error so drawing code can ignore them.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
