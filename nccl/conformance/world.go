package conformance

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
)

// world is a communicator on each device, with a stream and a send and a
// receive buffer of size bytes on each, freed at cleanup.
type world struct {
	rt         cudart.Runtime
	lib        *nccl.Library
	devs       []int
	comms      []*nccl.Comm
	s          []cudart.Stream
	send, recv []cudart.DevicePtr
}

// newWorld makes a world, its communicators with opts.
func newWorld(t *testing.T, rt cudart.Runtime, lib *nccl.Library, devs []int, size uint64, opts ...nccl.CommOption) *world {
	t.Helper()
	comms, err := lib.InitAll(devs, opts...)
	require.NoError(t, err, "InitAll")
	t.Cleanup(func() {
		for _, c := range comms {
			if err := c.Destroy(); err != nil {
				t.Errorf("Destroy: %v", err)
			}
		}
	})
	w := newBuffers(t, rt, lib, devs, size)
	w.comms = comms
	return w
}

// newBuffers is a world without communicators: its streams and buffers.
func newBuffers(t *testing.T, rt cudart.Runtime, lib *nccl.Library, devs []int, size uint64) *world {
	t.Helper()
	st, ok := rt.(cudart.Streams)
	require.True(t, ok, "the runtime makes streams (cudart.Streams)")
	w := &world{rt: rt, lib: lib, devs: devs}
	for _, d := range devs {
		s, err := st.StreamCreate(d)
		require.NoError(t, err, "StreamCreate")
		t.Cleanup(func() {
			if err := st.StreamDestroy(d, s); err != nil {
				t.Errorf("StreamDestroy: %v", err)
			}
		})
		w.s = append(w.s, s)
		for _, p := range []*[]cudart.DevicePtr{&w.send, &w.recv} {
			b, err := rt.Malloc(d, size)
			require.NoError(t, err, "Malloc")
			t.Cleanup(func() {
				if err := rt.Free(d, b); err != nil {
					t.Errorf("Free: %v", err)
				}
			})
			*p = append(*p, b)
		}
	}
	return w
}

func (w *world) n() int { return len(w.devs) }

func (w *world) put(t *testing.T, r int, p cudart.DevicePtr, b []byte) {
	t.Helper()
	require.NoError(t, w.rt.Memcpy(w.devs[r], cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice), "Memcpy to rank %d", r)
}

func (w *world) get(t *testing.T, r int, p cudart.DevicePtr, n uint64) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, w.rt.Memcpy(w.devs[r], cudart.HostMem(b), cudart.DeviceMem(p, n), cudart.DeviceToHost), "Memcpy from rank %d", r)
	return b
}

func (w *world) sync(t *testing.T) {
	t.Helper()
	st := w.rt.(cudart.Streams)
	for r, d := range w.devs {
		require.NoError(t, st.StreamSynchronize(d, w.s[r]), "StreamSynchronize on rank %d", r)
	}
}

// values are count elements of type t, small multiples of 1/4 for floats
// and small integers, from seed: exact in every type, so that a sum is exact
// and a product or an average rounds only where the type must.
func values(seed uint64, count uint64, t nccl.DataType) ([]byte, []float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	es := t.Size()
	b := make([]byte, count*es)
	v := make([]float64, count)
	for i := range count {
		k := int64(r.IntN(17)) - 8
		switch t {
		case nccl.Int32:
			binary.LittleEndian.PutUint32(b[i*es:], uint32(int32(k)))
			v[i] = float64(k)
		case nccl.Int64:
			binary.LittleEndian.PutUint64(b[i*es:], uint64(k))
			v[i] = float64(k)
		default:
			x := float64(k) / 4
			v[i] = x
			putFloat(b[i*es:], t, x)
		}
	}
	return b, v
}

func putFloat(b []byte, t nccl.DataType, x float64) {
	switch t {
	case nccl.Float16:
		binary.LittleEndian.PutUint16(b, blas.F16(float32(x)))
	case nccl.BFloat16:
		binary.LittleEndian.PutUint16(b, blas.BF16(float32(x)))
	default:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(x)))
	}
}

// decode is element i of b, of type t, as a float64 (exact for every type
// and value here).
func decode(b []byte, i uint64, t nccl.DataType) float64 {
	o := b[i*t.Size():]
	switch t {
	case nccl.Int32:
		return float64(int32(binary.LittleEndian.Uint32(o)))
	case nccl.Int64:
		return float64(int64(binary.LittleEndian.Uint64(o)))
	case nccl.Float16:
		return float64(blas.F16To32(binary.LittleEndian.Uint16(o)))
	case nccl.BFloat16:
		return float64(blas.BF16To32(binary.LittleEndian.Uint16(o)))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(o)))
}

// unitRoundoff is half a unit in the last place of 1 in t: 2^-24 for FP32,
// 2^-11 for FP16, 2^-8 for BF16; 0 for integers, which are exact.
func unitRoundoff(t nccl.DataType) float64 {
	switch t {
	case nccl.Float32:
		return 0x1p-24
	case nccl.Float16:
		return 0x1p-11
	case nccl.BFloat16:
		return 0x1p-8
	}
	return 0
}

// reduce is the exact reduction of xs with op, and the bound a GPU's result
// may differ from it by: NCCL adds and multiplies in the type's precision,
// in an order its algorithm picks, scaling by 1/n first for an average of
// floats, so each of the n ranks' steps may round by u relative. The bound
// is (n+2)·u·Σ|xᵢ| for a sum or an average, (n+2)·u·|Πxᵢ| for a product;
// integers, min and max are exact. An integer average is the sum divided by
// n, truncated toward zero.
func reduce(xs []float64, op nccl.RedOp, t nccl.DataType) (exact, bound float64) {
	n := float64(len(xs))
	u := unitRoundoff(t)
	switch op {
	case nccl.Sum, nccl.Avg:
		abs := 0.0
		for _, x := range xs {
			exact += x
			abs += math.Abs(x)
		}
		if op == nccl.Avg {
			if u == 0 {
				return math.Trunc(exact / n), 0
			}
			exact /= n
			abs /= n
		}
		return exact, (n + 2) * u * abs
	case nccl.Prod:
		exact = 1
		for _, x := range xs {
			exact *= x
		}
		return exact, (n + 2) * u * math.Abs(exact)
	case nccl.Max:
		exact = math.Inf(-1)
		for _, x := range xs {
			exact = math.Max(exact, x)
		}
	case nccl.Min:
		exact = math.Inf(1)
		for _, x := range xs {
			exact = math.Min(exact, x)
		}
	}
	return exact, 0
}
