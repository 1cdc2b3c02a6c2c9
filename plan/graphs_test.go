package plan

import (
	"fmt"
	"math/rand/v2"
)

// graph records the tensors of a synthetic forward pass op by op, the way
// the traces were recorded: a tensor lives from the op that writes it to the
// last op that reads it.
type graph struct {
	name    string
	step    int
	tensors []Request
}

// op runs one op that reads the inputs and writes a tensor of size bytes,
// returning the new tensor.
func (g *graph) op(size uint64, inputs ...int) int {
	for _, in := range inputs {
		g.tensors[in].Last = g.step
	}
	g.tensors = append(g.tensors, Request{Size: size, First: g.step, Last: g.step})
	g.step++
	return len(g.tensors) - 1
}

// act is the bytes of an fp32 activation.
func act(batch, c, h, w int) uint64 { return uint64(batch*c*h*w) * 4 }

// width scales a channel count by a network's width multiplier, rounded to
// a multiple of 8 as MobileNet and EfficientNet do, so that sizes are not
// all powers of two.
func width(c int, mult float64) int { return max(8, int(float64(c)*mult+4)/8*8) }

// resolution picks an input side among those real models are run at.
func resolution(r *rand.Rand) int { return []int{160, 192, 224, 240, 256, 299, 320, 384}[r.IntN(8)] }

// residualNet is a ResNet-like network: bottleneck blocks whose input lives
// across the block for the skip connection, stages halving the spatial size
// and doubling the channels, with optional separate batch-norm and ReLU
// tensors (some exporters fuse them).
func residualNet(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("residual_b%d", batch)}
	hw := resolution(r) / 4
	c := width(256, 0.5+r.Float64())
	x := g.op(act(batch, c, hw*2, hw*2))
	x = g.op(act(batch, c, hw, hw), x)
	separate := r.IntN(2) == 0
	for stage, blocks := range []int{3, 4, 2 + r.IntN(20), 3} {
		for b := range blocks {
			in := x
			mid := c / 4
			if separate {
				x = g.op(act(batch, mid, hw, hw), g.op(act(batch, mid, hw, hw), x))
			} else {
				x = g.op(act(batch, mid, hw, hw), x)
			}
			x = g.op(act(batch, mid, hw, hw), x)
			x = g.op(act(batch, c, hw, hw), x)
			if b == 0 && stage > 0 {
				in = g.op(act(batch, c, hw, hw), in)
			}
			x = g.op(act(batch, c, hw, hw), x, in)
		}
		if stage < 3 {
			x = g.op(act(batch, c*2, (hw+1)/2, (hw+1)/2), x)
			c, hw = c*2, (hw+1)/2
		}
	}
	g.op(uint64(batch)*4000, g.op(act(batch, c, 1, 1), x))
	return g
}

// unet is an encoder-decoder whose encoder features live until the decoder
// level that concatenates them: long-lived large tensors nested around
// short-lived ones.
func unet(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("unet_b%d", batch)}
	hw := resolution(r) / 16 * 16
	c := width(32, 0.5+r.Float64())
	levels := 3 + r.IntN(2)
	x := g.op(act(batch, c, hw, hw))
	var skips []int
	for range levels {
		x = g.op(act(batch, c, hw, hw), g.op(act(batch, c, hw, hw), x))
		skips = append(skips, x)
		x = g.op(act(batch, c, hw/2, hw/2), x)
		c, hw = c*2, hw/2
	}
	x = g.op(act(batch, c, hw, hw), g.op(act(batch, c, hw, hw), x))
	for l := levels - 1; l >= 0; l-- {
		c, hw = c/2, hw*2
		up := g.op(act(batch, c, hw, hw), x)
		cat := g.op(act(batch, 2*c, hw, hw), up, skips[l])
		x = g.op(act(batch, c, hw, hw), g.op(act(batch, c, hw, hw), cat))
	}
	g.op(act(batch, 2, hw, hw), x)
	return g
}

// transformer is a text encoder: per layer the attention scores grow with
// the square of the sequence, the MLP with four times the width, and the
// residual stream lives across each half-layer.
func transformer(r *rand.Rand, batch int) graph {
	seq := 32 + r.IntN(480)
	heads := 4 + r.IntN(13)
	d := heads * 64
	g := graph{name: fmt.Sprintf("transformer_s%d_d%d_b%d", seq, d, batch)}
	tok := uint64(batch * seq * 4)
	x := g.op(tok * uint64(d))
	for range 4 + r.IntN(9) {
		q := g.op(tok*uint64(d), x)
		k := g.op(tok*uint64(d), x)
		v := g.op(tok*uint64(d), x)
		scores := g.op(uint64(batch*heads*seq*seq)*4, q, k)
		probs := g.op(uint64(batch*heads*seq*seq)*4, scores)
		ctx := g.op(tok*uint64(d), g.op(tok*uint64(d), probs, v))
		x = g.op(tok*uint64(d), g.op(tok*uint64(d), ctx, x))
		h := g.op(tok*uint64(4*d), g.op(tok*uint64(4*d), x))
		x = g.op(tok*uint64(d), g.op(tok*uint64(d), h), x)
	}
	return g
}

// inception has parallel branches of different depths from one input that
// merge by concatenation: several tensors born together, dying apart.
func inception(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("inception_b%d", batch)}
	hw, c := resolution(r)/4, width(192, 0.5+r.Float64())
	x := g.op(act(batch, c, hw, hw))
	for m := range 6 + r.IntN(6) {
		var outs []int
		for br := range 4 {
			y := x
			w := width(c/4, 0.5+r.Float64())
			for range br%3 + 1 {
				y = g.op(act(batch, w, hw, hw), y)
			}
			outs = append(outs, y)
		}
		x = g.op(act(batch, c, hw, hw), outs...)
		if m%3 == 2 && hw > 7 {
			c, hw = c+width(64, r.Float64()), (hw+1)/2
			x = g.op(act(batch, c, hw, hw), x)
		}
	}
	return g
}

// denseNet concatenates every earlier feature of a block: many tensors live
// to the end of their block while growing concatenations come and go.
func denseNet(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("densenet_b%d", batch)}
	hw, growth := resolution(r)/4, 8+8*r.IntN(5)
	c := width(64, 0.5+r.Float64())
	x := g.op(act(batch, c, hw, hw))
	for block := range 3 {
		feats := []int{x}
		for range 4 + r.IntN(8) {
			cat := g.op(act(batch, c, hw, hw), feats...)
			y := g.op(act(batch, growth, hw, hw), g.op(act(batch, 4*growth, hw, hw), cat))
			feats = append(feats, y)
			c += growth
		}
		x = g.op(act(batch, c, hw, hw), feats...)
		if block < 2 {
			c, hw = c/2, hw/2
			x = g.op(act(batch, c, hw, hw), x)
		}
	}
	return g
}

// mobileNet is built of inverted residual blocks: expand six-fold,
// depthwise, project, add the block's input when shapes match.
func mobileNet(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("mobilenet_b%d", batch)}
	mult := 0.35 + r.Float64()
	hw, c := resolution(r)/2, width(16, mult)
	x := g.op(act(batch, width(32, mult), hw, hw))
	for stage := range 6 {
		out := width([]int{24, 32, 64, 96, 160, 320}[stage], mult)
		for b := range 1 + r.IntN(4) {
			e := g.op(act(batch, 6*c, hw, hw), x)
			if b == 0 && stage%2 == 0 {
				hw = (hw + 1) / 2
			}
			y := g.op(act(batch, out, hw, hw), g.op(act(batch, 6*c, hw, hw), e))
			if b > 0 {
				y = g.op(act(batch, out, hw, hw), y, x)
			}
			x, c = y, out
		}
	}
	return g
}

// randomDAG is a chain of ops whose inputs reach back a random distance
// (skip connections of every length) and whose sizes change by stages, with
// occasional ops whose output is never read.
func randomDAG(r *rand.Rand, ops int) graph {
	g := graph{name: fmt.Sprintf("dag_%d", ops)}
	size := uint64(1+r.IntN(64)) << 16
	for i := range ops {
		if r.IntN(20) == 0 {
			size = uint64(1+r.IntN(64)) << (12 + r.IntN(8))
		}
		var in []int
		if i > 0 {
			in = append(in, i-1)
		}
		for r.IntN(3) == 0 && i > 1 {
			in = append(in, i-1-int(r.ExpFloat64()*8)%i)
		}
		g.op(size*uint64(1+r.IntN(3)), in...)
	}
	return g
}

// realisticGraphs returns graphs of the shapes real inference graphs have,
// none of them one of the checked-in traces, from a fixed seed.
func realisticGraphs() []graph {
	r := rand.New(rand.NewPCG(7, 11))
	var gs []graph
	for _, batch := range []int{1, 2, 3, 8} {
		gs = append(gs,
			residualNet(r, batch), unet(r, batch), transformer(r, batch),
			inception(r, batch), denseNet(r, batch), mobileNet(r, batch),
			detector(r, batch), seq2seq(r, batch),
		)
	}
	for _, ops := range []int{50, 200, 600} {
		gs = append(gs, randomDAG(r, ops))
	}
	for i := range gs {
		gs[i].name = fmt.Sprintf("%02d_%s", i, gs[i].name)
	}
	return gs
}

// detector is a backbone whose features at several scales feed a pyramid
// and a head that runs on every level: feature maps of very different sizes
// living across many ops.
func detector(r *rand.Rand, batch int) graph {
	g := graph{name: fmt.Sprintf("detector_b%d", batch)}
	hw, c := resolution(r)/4, width(64, 0.5+r.Float64())
	x := g.op(act(batch, c, hw, hw))
	var levels, sides []int
	for range 4 {
		for range 2 + r.IntN(4) {
			x = g.op(act(batch, c, hw, hw), g.op(act(batch, c, hw, hw), x), x)
		}
		levels, sides = append(levels, x), append(sides, hw)
		c, hw = c*2, (hw+1)/2
		x = g.op(act(batch, c, hw, hw), x)
	}
	fpn := width(256, 0.5+r.Float64())
	top := g.op(act(batch, fpn, sides[3], sides[3]), levels[3])
	outs := []int{top}
	for l := 2; l >= 0; l-- {
		lat := g.op(act(batch, fpn, sides[l], sides[l]), levels[l])
		top = g.op(act(batch, fpn, sides[l], sides[l]), lat, top)
		outs = append(outs, top)
	}
	for k, o := range outs {
		side := sides[3-k]
		h := g.op(act(batch, fpn, side, side), o)
		g.op(act(batch, 9*(4+80), side, side)/4, h)
		g.op(act(batch, 9*4, side, side), h)
	}
	return g
}

// seq2seq is an encoder-decoder transformer: the encoder's output lives
// through the whole decoder, which reads it in every cross-attention.
func seq2seq(r *rand.Rand, batch int) graph {
	src, tgt := 32+r.IntN(256), 16+r.IntN(128)
	heads := 4 + r.IntN(9)
	d := heads * 64
	g := graph{name: fmt.Sprintf("seq2seq_s%d_t%d_b%d", src, tgt, batch)}
	attn := func(x, kv, q, k int) int {
		qt := g.op(uint64(batch*q*d*4), x)
		kt := g.op(uint64(batch*k*d*4), kv)
		vt := g.op(uint64(batch*k*d*4), kv)
		s := g.op(uint64(batch*heads*q*k*4), qt, kt)
		p := g.op(uint64(batch*heads*q*k*4), s)
		return g.op(uint64(batch*q*d*4), g.op(uint64(batch*q*d*4), p, vt), x)
	}
	mlp := func(x, n int) int {
		h := g.op(uint64(batch*n*4*d*4), g.op(uint64(batch*n*4*d*4), x))
		return g.op(uint64(batch*n*d*4), g.op(uint64(batch*n*d*4), h), x)
	}
	enc := g.op(uint64(batch * src * d * 4))
	for range 2 + r.IntN(5) {
		enc = mlp(attn(enc, enc, src, src), src)
	}
	dec := g.op(uint64(batch * tgt * d * 4))
	for range 2 + r.IntN(5) {
		dec = attn(dec, dec, tgt, tgt)
		dec = attn(dec, enc, tgt, src)
		dec = mlp(dec, tgt)
	}
	g.op(uint64(batch*tgt*32000*4), dec)
	return g
}
