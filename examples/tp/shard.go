package main

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/mlpmodel"
	"github.com/cudapool/cudapool/nccl"
)

// shard is one rank's part of the model on one device; with size 1 (a
// replica, or one GPU) the whole model. Rank r of n holds rows r·h/n to
// (r+1)·h/n of W1 and b1 (layer 1 split by its outputs, h = Dims[1]), the
// same columns of W2 (layer 2 split by its inputs: its partial products
// are summed by the all-reduce), and all of b2, W3 and b3: layer 3 runs
// whole on every rank, after the all-reduce (see the package doc for why).
type shard struct {
	rt         cudart.Full
	dev        int
	rank, size int
	p          *mlpmodel.Params
	hs         int // layer 1's outputs on this rank
	mod        cudart.Module
	fn         cudart.Function
	values     []float32 // the shard's parameters, as on the device
	// float offsets in values of b1's rows, W2's columns, b2, W3 and b3;
	// W1's rows come first, at 0
	offB1, offW2, offB2, offW3, offB3 int
}

func newShard(rt cudart.Full, dev int, p *mlpmodel.Params, rank, size int) (*shard, error) {
	d := p.Dims
	if d[1]%size != 0 {
		return nil, fmt.Errorf("layer 1's %d outputs do not split into %d ranks", d[1], size)
	}
	s := &shard{rt: rt, dev: dev, rank: rank, size: size, p: p, hs: d[1] / size}
	lo, hi := rank*s.hs, (rank+1)*s.hs
	w1, w2 := p.W(0), p.W(1)
	for j := range d[0] {
		s.values = append(s.values, w1[lo+j*d[1]:hi+j*d[1]]...)
	}
	s.offB1 = len(s.values)
	s.values = append(s.values, p.B(0)[lo:hi]...)
	s.offW2 = len(s.values)
	s.values = append(s.values, w2[lo*d[2]:hi*d[2]]...)
	s.offB2 = len(s.values)
	s.values = append(s.values, p.B(1)...)
	s.offW3 = len(s.values)
	s.values = append(s.values, p.W(2)...)
	s.offB3 = len(s.values)
	s.values = append(s.values, p.B(2)...)
	var err error
	if s.mod, s.fn, err = mlpmodel.LoadKernel(rt, dev); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *shard) close() error { return s.rt.ModuleUnload(s.dev, s.mod) }

// bytes is the size of the shard's parameters.
func (s *shard) bytes() uint64 { return 4 * uint64(len(s.values)) }

// load copies the shard's parameters to p on its device.
func (s *shard) load(p cudart.DevicePtr) error {
	b := floats.Bytes(s.values)
	return s.rt.Memcpy(s.dev, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice)
}

// The sizes of a request's buffers at rows batch rows: pinned staging in
// and out, and on the device the input x, layer 1's outputs h (this rank's
// part), layer 2's y (partial, then summed in place) and the output z.
func (s *shard) inBytes(rows int) uint64  { return 4 * uint64(s.p.Dims[0]*rows) }
func (s *shard) outBytes(rows int) uint64 { return 4 * uint64(s.p.Dims[3]*rows) }
func (s *shard) hBytes(rows int) uint64   { return 4 * uint64(s.hs*rows) }
func (s *shard) yBytes(rows int) uint64   { return 4 * uint64(s.p.Dims[2]*rows) }

// bufs are where one request runs on one device.
type bufs struct {
	in, out    []byte
	x, h, y, z cudart.DevicePtr
	w          cudart.DevicePtr // the shard's parameters
	rows       int
	stream     cudart.Stream
	blas       gemmer
	comm       *nccl.Comm // nil for a shard of size 1
}

// gemmer queues GEMMs: a slot's cuBLAS handle lent to the request.
type gemmer interface {
	Gemm(cublas.Gemm) error
}

func (s *shard) gemm(b *bufs, m, k int, a cudart.DevicePtr, lda int, x cudart.DevicePtr, y cudart.DevicePtr) error {
	return b.blas.Gemm(cublas.Gemm{
		TransA: cublas.NoTrans, TransB: cublas.NoTrans, M: m, N: b.rows, K: k, Alpha: 1,
		A: cublas.Matrix{Ptr: a, Type: cublas.Float32, LD: lda},
		B: cublas.Matrix{Ptr: x, Type: cublas.Float32, LD: k},
		C: cublas.Matrix{Ptr: y, Type: cublas.Float32, LD: m},
	})
}

func (s *shard) biasAct(b *bufs, y cudart.DevicePtr, bias int, rows int, relu bool) error {
	n := uint32(rows * b.rows)
	r := uint32(0)
	if relu {
		r = 1
	}
	return s.rt.LaunchKernel(s.dev, s.fn, cudart.Dim1((n+mlpmodel.BlockSize-1)/mlpmodel.BlockSize), cudart.Dim1(mlpmodel.BlockSize), 0, b.stream,
		cudart.Arg(y), cudart.Arg(b.w.Add(4*uint64(bias))), cudart.Arg(uint32(rows)), cudart.Arg(n), cudart.Arg(r))
}

// before queues what comes before the all-reduce: the input staged, layer
// 1 on this rank's outputs, and layer 2's partial product of them.
func (s *shard) before(b *bufs) error {
	d := s.p.Dims
	in := s.inBytes(b.rows)
	if err := s.rt.MemcpyAsync(s.dev, cudart.DeviceMem(b.x, in), cudart.HostMem(b.in[:in]), cudart.HostToDevice, b.stream); err != nil {
		return err
	}
	if err := s.gemm(b, s.hs, d[0], b.w, s.hs, b.x, b.h); err != nil {
		return err
	}
	if err := s.biasAct(b, b.h, s.offB1, s.hs, true); err != nil {
		return err
	}
	return s.gemm(b, d[2], s.hs, b.w.Add(4*uint64(s.offW2)), d[2], b.h, b.y)
}

// allReduce is the sum of the ranks' partial layer 2, in place.
func (s *shard) allReduce(b *bufs) nccl.Op {
	return b.comm.AllReduceOp(b.y, b.y, uint64(s.p.Dims[2]*b.rows), nccl.Float32, nccl.Sum, b.stream)
}

// after queues what follows the all-reduce: layer 2's bias and ReLU, layer
// 3 whole, and the output staged out.
func (s *shard) after(b *bufs) error {
	d := s.p.Dims
	if err := s.biasAct(b, b.y, s.offB2, d[2], true); err != nil {
		return err
	}
	if err := s.gemm(b, d[3], d[2], b.w.Add(4*uint64(s.offW3)), d[3], b.y, b.z); err != nil {
		return err
	}
	if err := s.biasAct(b, b.z, s.offB3, d[3], false); err != nil {
		return err
	}
	out := s.outBytes(b.rows)
	return s.rt.MemcpyAsync(s.dev, cudart.HostMem(b.out[:out]), cudart.DeviceMem(b.z, out), cudart.DeviceToHost, b.stream)
}

// member is one device's part of a request: its shard and buffers.
type member struct {
	s *shard
	b *bufs
}

// enqueue queues a whole request on every member, call by call: each one's
// part before the all-reduce, the all-reduce of all of them as one NCCL
// group (one process driving several devices, or one rank), then each
// one's part after it.
func enqueue(lib *nccl.Library, ms []member) error {
	if err := eachMember(ms, func(m member) error { return m.s.before(m.b) }); err != nil {
		return err
	}
	if err := allReduceAll(lib, ms); err != nil {
		return err
	}
	return eachMember(ms, func(m member) error { return m.s.after(m.b) })
}

func allReduceAll(lib *nccl.Library, ms []member) error {
	if ms[0].b.comm == nil {
		return nil
	}
	ops := make([]nccl.Op, len(ms))
	for i, m := range ms {
		ops[i] = m.s.allReduce(m.b)
	}
	return lib.Group(ops...)
}

func eachMember(ms []member, f func(member) error) error {
	for _, m := range ms {
		if err := f(m); err != nil {
			return err
		}
	}
	return nil
}

// captureMembers records what record queues on every member's stream into
// a graph a member (package capture: every capture ended before any graph
// is instantiated, as the Caveats of package nccl ask), counts each graph's
// nodes, and launches them once together (the upload, and a collective's
// first run, are then no request's), waiting for them with wait (a bounded
// one where a peer may be gone).
func captureMembers(ms []member, record func() error, wait func([]member) error) ([]cudart.GraphExec, []cudart.GraphNodeCounts, error) {
	rt, on := ms[0].s.rt, make([]capture.Stream, len(ms))
	for i, m := range ms {
		on[i] = capture.Stream{Device: m.s.dev, Stream: m.b.stream}
	}
	execs, counts, err := capture.Instantiate(rt, on, record)
	if err != nil {
		return nil, nil, err
	}
	if err = launch(ms, execs); err == nil {
		err = wait(ms)
	}
	if err != nil {
		return nil, nil, errors.Join(err, capture.Destroy(rt, on, execs))
	}
	return execs, counts, nil
}

// launch launches each member's graph on its stream.
func launch(ms []member, gs []cudart.GraphExec) error {
	for i, m := range ms {
		if err := m.s.rt.GraphLaunch(m.s.dev, gs[i], m.b.stream); err != nil {
			return err
		}
	}
	return nil
}
