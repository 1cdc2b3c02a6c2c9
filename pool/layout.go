package pool

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// Placement is one placed buffer in a Layout.
type Placement struct {
	Name   string
	Arena  Arena
	Offset uint64
	Size   uint64
	// First and Last are the buffer's steps; a buffer without Live has
	// Whole set and lives for the whole plan.
	First, Last int
	Whole       bool
}

// String is one line: arena, name, offset, size and steps, e.g.
// `device "conv1.out" at 0x100, 16 MiB, steps 0..3`.
func (pl Placement) String() string {
	return fmt.Sprintf("%s %s at %#x, %s, %s", pl.Arena, pl.label(), pl.Offset, bytesize.Format(pl.Size), pl.steps())
}

func (pl Placement) label() string {
	if pl.Name == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", pl.Name)
}

func (pl Placement) steps() string {
	if pl.Whole {
		return "all steps"
	}
	return fmt.Sprintf("steps %d..%d", pl.First, pl.Last)
}

// Layout is every placed buffer, ordered by arena, offset and first step.
type Layout []Placement

// String is a table with a header and one row a buffer, so that
// fmt.Println(p.Layout()) shows the plan.
func (l Layout) String() string {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "arena\tname\toffset\tend\tsize\tsteps")
	for _, pl := range l {
		fmt.Fprintf(w, "%s\t%s\t%#x\t%#x\t%s\t%s\n", pl.Arena, pl.label(), pl.Offset, pl.Offset+pl.Size, bytesize.Format(pl.Size), pl.steps())
	}
	w.Flush()
	return sb.String()
}

// Layout returns every placed buffer, ordered by arena, offset and first
// step; after Close, none.
func (p *Pool) Layout() Layout {
	if p.valid() != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	var out Layout
	for _, l := range p.arenas {
		if l == nil {
			continue
		}
		for _, b := range l.placed {
			out = append(out, Placement{Name: b.name, Arena: b.arena, Offset: b.offset, Size: b.size, First: int(b.first), Last: int(b.last), Whole: !b.hasLife})
		}
	}
	slices.SortStableFunc(out, func(x, y Placement) int {
		return cmp.Or(cmp.Compare(x.Arena, y.Arena), cmp.Compare(x.Offset, y.Offset), cmp.Compare(x.First, y.First))
	})
	return out
}
