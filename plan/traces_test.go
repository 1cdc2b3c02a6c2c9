package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dustin/go-humanize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The targets a plan must meet on real inference graphs, as arena over
// lower bound.
const (
	targetGeoMean = 1.001
	targetWorst   = 1.01
)

// TestTraces plans the ten recorded inference graphs and checks each plan
// and the ratios against the targets. Run with -v for the table.
func TestTraces(t *testing.T) {
	files, err := filepath.Glob("testdata/traces/*.json")
	require.NoError(t, err)
	require.Len(t, files, 10)
	var rows []ratioRow
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		tr, err := ReadTrace(fh)
		require.NoError(t, fh.Close())
		require.NoError(t, err, f)
		rows = append(rows, planRow(t, tr.Model, tr.Tensors))
	}
	checkRatios(t, rows)
}

// TestRealisticGraphs checks the same targets on graphs none of which is in
// testdata: residual, U-Net, transformer, inception, dense, mobile,
// detection and encoder-decoder networks at several batch sizes and widths,
// and random chains with skip connections.
func TestRealisticGraphs(t *testing.T) {
	var rows []ratioRow
	for _, g := range realisticGraphs() {
		rows = append(rows, planRow(t, g.name, g.tensors))
	}
	checkRatios(t, rows)
}

type ratioRow struct {
	name           string
	tensors        int
	lb, arena      uint64
	greedy, shared uint64
}

func (r ratioRow) ratio() float64 { return float64(r.arena) / float64(r.lb) }

// planRow plans reqs, checks the plan, and measures it with greedy by size
// and no sharing for comparison.
func planRow(t *testing.T, name string, reqs []Request) ratioRow {
	res, err := Plan(reqs)
	require.NoError(t, err, name)
	require.NoError(t, Validate(reqs, res.Offsets), name)
	row := ratioRow{name: name, tensors: len(reqs), lb: res.LowerBound, arena: res.ArenaBytes}
	p, err := newProblem(reqs, nil)
	require.NoError(t, err)
	busy, _ := fixedBusy(p.items, nil, nil)
	d := newDecoder(p.items, buildConflicts(p.items, byFirstStep(p.items)), busy)
	row.greedy = d.decode(bySize(p.items), math.MaxUint64, math.MaxUint64).top
	for _, it := range p.items {
		row.shared += it.size
	}
	return row
}

func checkRatios(t *testing.T, rows []ratioRow) {
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-28s %7s %10s %10s %8s %8s %8s\n", "graph", "tensors", "lower", "arena", "ratio", "greedy", "unshared")
	var logSum, greedyLog float64
	worst := rows[0]
	for _, r := range rows {
		assert.LessOrEqual(t, r.ratio(), targetWorst, r.name)
		logSum += math.Log(r.ratio())
		greedyLog += math.Log(float64(r.greedy) / float64(r.lb))
		if r.ratio() > worst.ratio() {
			worst = r
		}
		fmt.Fprintf(&table, "%-28s %7d %10s %10s %8.4f %8.4f %8.2f\n", r.name, r.tensors,
			humanize.IBytes(r.lb), humanize.IBytes(r.arena), r.ratio(),
			float64(r.greedy)/float64(r.lb), float64(r.shared)/float64(r.lb))
	}
	geo := math.Exp(logSum / float64(len(rows)))
	fmt.Fprintf(&table, "geometric mean %.5f (greedy by size %.5f), worst %.4f (%s)",
		geo, math.Exp(greedyLog/float64(len(rows))), worst.ratio(), worst.name)
	t.Log(table.String())
	assert.LessOrEqual(t, geo, targetGeoMean)
}

// TestGraphFamilies draws many more graphs of each family from other seeds
// and checks the targets over all of them.
func TestGraphFamilies(t *testing.T) {
	gens := []func(*rand.Rand, int) graph{residualNet, unet, transformer, inception, denseNet, mobileNet, detector, seq2seq}
	var logSum, worst float64
	n, atBound := 0, 0
	for s := range 25 {
		r := rand.New(rand.NewPCG(uint64(s), 2024))
		gs := []graph{randomDAG(r, 20+r.IntN(600))}
		for _, gen := range gens {
			gs = append(gs, gen(r, 1+r.IntN(8)))
		}
		for _, g := range gs {
			res, err := Plan(g.tensors)
			require.NoError(t, err, g.name)
			require.NoError(t, Validate(g.tensors, res.Offsets), g.name)
			ratio := float64(res.ArenaBytes) / float64(res.LowerBound)
			assert.LessOrEqual(t, ratio, targetWorst, "seed %d %s", s, g.name)
			logSum += math.Log(ratio)
			worst = max(worst, ratio)
			n++
			if ratio == 1 {
				atBound++
			}
		}
	}
	geo := math.Exp(logSum / float64(n))
	t.Logf("%d graphs: %d at the lower bound, geometric mean %.5f, worst %.4f", n, atBound, geo, worst)
	assert.LessOrEqual(t, geo, targetGeoMean)
}
