package main

import (
	"encoding/binary"
	"math"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/floats"
)

// registerKernels gives the fake a Go implementation of each PTX entry,
// reading and writing what the PTX does (the page tables, then the pages
// they name), so that a wrong table or a page freed too soon fails on the
// fake as it would fault or read garbage on a GPU. Real CUDA runs the PTX.
func registerKernels(rt cudart.Runtime) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel("embed", fakeEmbed)
	f.RegisterKernel("rmsnorm", fakeRMSNorm)
	f.RegisterKernel("kv_store", fakeKVStore)
	f.RegisterKernel("attention", fakeAttention)
	f.RegisterKernel("relu", fakeReLU)
	f.RegisterKernel("argmax", fakeArgmax)
}

// dev reads and writes device memory for a fake kernel; after the first
// failed access every read gives zeros and the launch fails.
type mem struct{ k *cudarttest.KernelContext }

func (d mem) bytes(p cudart.DevicePtr, n int) []byte {
	b := make([]byte, n)
	d.k.Read(p, b)
	return b
}

func (d mem) int32s(p cudart.DevicePtr, n int) []int32 {
	b := d.bytes(p, 4*n)
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func (d mem) floats(p cudart.DevicePtr, n int) []float32 {
	b := d.bytes(p, 4*n)
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func (d mem) halves(p cudart.DevicePtr, n int) []float32 {
	return halvesOf(d.bytes(p, 2*n))
}

func halvesOf(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = cublas.Float16FromBits(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

func (d mem) putFloats(p cudart.DevicePtr, v []float32) { d.k.Write(p, floats.Bytes(v)) }

func (d mem) putHalves(p cudart.DevicePtr, v []float32) {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], cublas.Float16Bits(x))
	}
	d.k.Write(p, b)
}

// putSplit writes v as the GEMMs read it: its FP16 halves (split) at hi
// and lo.
func (d mem) putSplit(hi, lo cudart.DevicePtr, v []float32) {
	h, l := make([]float32, len(v)), make([]float32, len(v))
	for i, x := range v {
		h[i], l[i] = split(x)
	}
	d.putHalves(hi, h)
	d.putHalves(lo, l)
}

// rowDesc is one row of a step's descriptor.
type rowDesc struct{ token, tableRow, pos int32 }

func (d mem) desc(p cudart.DevicePtr, n int) []rowDesc {
	v := d.int32s(p, 4*n)
	out := make([]rowDesc, n)
	for i := range out {
		out[i] = rowDesc{v[4*i], v[4*i+1], v[4*i+2]}
	}
	return out
}

// threads is the launch's threads, as a kernel that gives a thread an
// element covers.
func threads(k *cudarttest.KernelContext) int { return int(min(k.Threads(), 1<<40)) }

func fakeEmbed(k *cudarttest.KernelContext) error {
	d := mem{k}
	width, n := int(k.Uint32(4)), int(k.Uint32(5))
	if width == 0 || n == 0 {
		return nil
	}
	rows := min(n, threads(k)/width)
	x, emb, pos := k.Ptr(0), k.Ptr(2), k.Ptr(3)
	col := make([]float32, width)
	for r, rd := range d.desc(k.Ptr(1), rows) {
		e := d.halves(emb.Add(2*uint64(rd.token)*uint64(width)), width)
		p := d.halves(pos.Add(2*uint64(rd.pos)*uint64(width)), width)
		embedOne(col, e, p)
		d.putFloats(x.Add(4*uint64(r*width)), col)
	}
	return nil
}

func fakeRMSNorm(k *cudarttest.KernelContext) error {
	d := mem{k}
	hi, lo, x, gainPtr, idx := k.Ptr(0), k.Ptr(1), k.Ptr(2), k.Ptr(3), k.Ptr(4)
	width := int(k.Uint32(5))
	n := int(k.Grid().X)
	if width == 0 || n == 0 {
		return nil
	}
	src := make([]int32, n)
	if idx != 0 {
		src = d.int32s(idx, n)
	} else {
		for j := range src {
			src[j] = int32(j)
		}
	}
	gain := d.halves(gainPtr, width)
	col := make([]float32, width)
	for j, c := range src {
		rmsNorm(col, d.floats(x.Add(4*uint64(c)*uint64(width)), width), gain)
		off := 2 * uint64(j*width)
		d.putSplit(hi.Add(off), lo.Add(off), col)
	}
	return nil
}

// pageAt is the address of the page row table entry e names, read from
// the table as the PTX reads it (an int32, sign-extended).
func (d mem) pageAt(table, pages cudart.DevicePtr, stride uint64, e int) cudart.DevicePtr {
	id := d.int32s(table.Add(4*uint64(e)), 1)[0]
	return pages.Add(uint64(int64(id)) * stride)
}

func fakeKVStore(k *cudarttest.KernelContext) error {
	d := mem{k}
	qkv, descPtr, table, pages := k.Ptr(0), k.Ptr(1), k.Ptr(2), cudart.DevicePtr(k.Uint64(3))
	stride := k.Uint64(4)
	maxPages, layer, qdim, kvdim, pt, n := int(k.Uint32(5)), int(k.Uint32(6)), int(k.Uint32(7)), int(k.Uint32(8)), int(k.Uint32(9)), int(k.Uint32(10))
	if kvdim == 0 || n == 0 || pt == 0 {
		return nil
	}
	rows := min(n, threads(k)/(2*kvdim))
	ld := qdim + 2*kvdim
	for r, rd := range d.desc(descPtr, rows) {
		v := d.floats(qkv.Add(4*uint64(r*ld+qdim)), 2*kvdim)
		page := d.pageAt(table, pages, stride, int(rd.tableRow)*maxPages+int(rd.pos)/pt)
		slot := int(rd.pos) % pt
		for kv := range 2 {
			off := ((2*layer+kv)*pt + slot) * kvdim
			d.putHalves(page.Add(2*uint64(off)), v[kv*kvdim:(kv+1)*kvdim])
		}
	}
	return nil
}

func fakeAttention(k *cudarttest.KernelContext) error {
	d := mem{k}
	hi, lo, qkv, descPtr, table, pages := k.Ptr(0), k.Ptr(1), k.Ptr(2), k.Ptr(3), k.Ptr(4), cudart.DevicePtr(k.Uint64(5))
	stride := k.Uint64(6)
	maxPages, layer, heads, kvheads, pt := int(k.Uint32(7)), int(k.Uint32(8)), int(k.Uint32(9)), int(k.Uint32(10)), int(k.Uint32(11))
	scale := k.Float32(12)
	g := k.Grid()
	if heads == 0 || kvheads == 0 || pt == 0 || g.X == 0 || g.Y == 0 || k.Block().X < 32 {
		return nil
	}
	hs, n := min(heads, int(g.X)), int(g.Y)
	qdim, kvdim := heads*headDim, kvheads*headDim
	ld := qdim + 2*kvdim
	// A page's keys and values of this layer, read once a launch: rows of
	// one sequence share them.
	layerBytes := 2 * pt * kvdim * 2
	read := map[cudart.DevicePtr][]float32{}
	o := make([]float32, headDim)
	q := make([]float32, headDim)
	for r, rd := range d.desc(descPtr, n) {
		row := d.floats(qkv.Add(4*uint64(r*ld)), qdim)
		m := int(rd.pos) + 1
		keys := make([]float32, m*kvdim)
		vals := make([]float32, m*kvdim)
		for t := range m {
			page := d.pageAt(table, pages, stride, int(rd.tableRow)*maxPages+t/pt)
			kv, ok := read[page]
			if !ok {
				kv = d.halves(page.Add(2*uint64(2*layer*pt*kvdim)), layerBytes/2)
				read[page] = kv
			}
			slot := t % pt
			copy(keys[t*kvdim:(t+1)*kvdim], kv[slot*kvdim:])
			copy(vals[t*kvdim:(t+1)*kvdim], kv[(pt+slot)*kvdim:])
		}
		scores := make([]float64, m)
		for h := range hs {
			gi := h / (heads / kvheads)
			copy(q, row[h*headDim:(h+1)*headDim])
			kh, vh := headOf(keys, m, kvdim, gi), headOf(vals, m, kvdim, gi)
			attend(o, q, kh, vh, m, scale, scores)
			off := 2 * uint64(r*qdim+h*headDim)
			d.putSplit(hi.Add(off), lo.Add(off), o)
		}
	}
	return nil
}

// headOf is KV head g's values of n positions of kvdim values each, a
// position after another.
func headOf(v []float32, n, kvdim, g int) []float32 {
	out := make([]float32, n*headDim)
	for t := range n {
		copy(out[t*headDim:(t+1)*headDim], v[t*kvdim+g*headDim:])
	}
	return out
}

func fakeReLU(k *cudarttest.KernelContext) error {
	d := mem{k}
	n := min(int(k.Uint32(3)), threads(k))
	if n == 0 {
		return nil
	}
	v := d.floats(k.Ptr(2), n)
	for i, x := range v {
		v[i] = relu(x)
	}
	d.putSplit(k.Ptr(0), k.Ptr(1), v)
	return nil
}

func fakeArgmax(k *cudarttest.KernelContext) error {
	d := mem{k}
	vocab, n := int(k.Uint32(2)), int(k.Grid().X)
	if vocab == 0 || n == 0 {
		return nil
	}
	out := make([]int32, n)
	for j := range out {
		out[j] = int32(argmax(d.floats(k.Ptr(1).Add(4*uint64(j*vocab)), vocab)))
	}
	k.Write(k.Ptr(0), int32Bytes(out))
	return nil
}
