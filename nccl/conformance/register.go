package conformance

import (
	"context"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/pool"
)

// regBytes is the buffer each rank registers in RegisterPool: count int32
// elements.
const regBytes = count * 4

// testRegisterPool: a pool's device buffer (PoolBuffer: pool.New on each
// rank's device, its fixed arena from cudaMalloc) and a slot's buffer
// (SlotBuffer: a slot of pool.NewMultiSlots on each device) register with
// the rank's communicator, an all-reduce on them in place sums every rank's
// values, and each registration deregisters.
func (s *suite) testRegisterPool(t *testing.T) {
	w := newWorld(t, s.rt, s.lib, s.devs, 8)
	t.Run("PoolBuffer", func(t *testing.T) {
		bufs := make([]cudart.DevicePtr, w.n())
		for r, d := range s.devs {
			p, err := pool.New(s.rt, pool.WithDevice(d), pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
			require.NoError(t, err, "pool.New on device %d", d)
			t.Cleanup(func() { require.NoError(t, p.Close(), "pool Close") })
			b, err := p.WantDevice(regBytes, pool.Name("x"))
			require.NoError(t, err, "WantDevice")
			require.NoError(t, p.Commit(), "Commit")
			bufs[r], err = b.Ptr()
			require.NoError(t, err, "Ptr")
		}
		s.allReduceRegistered(t, w, bufs, w.s)
	})
	t.Run("SlotBuffer", func(t *testing.T) {
		pr := pool.NewProfile("request")
		x, err := pr.Device(regBytes, pool.Name("x"))
		require.NoError(t, err, "Profile.Device")
		m, err := pool.NewMultiSlots(s.rt, s.devs, 1, pool.SlotLayout{Profiles: []*pool.Profile{pr}})
		require.NoError(t, err, "NewMultiSlots")
		t.Cleanup(func() { require.NoError(t, m.Close(), "MultiSlots Close") })
		bufs := make([]cudart.DevicePtr, w.n())
		streams := make([]cudart.Stream, w.n())
		for r, d := range s.devs {
			sl, err := m.On(d).Acquire(context.Background(), "request")
			require.NoError(t, err, "Acquire on device %d", d)
			t.Cleanup(func() { require.NoError(t, m.Release(sl), "Release") })
			bufs[r], err = sl.Ptr(x)
			require.NoError(t, err, "the slot's Ptr")
			streams[r], err = sl.Stream()
			require.NoError(t, err, "the slot's Stream")
		}
		s.allReduceRegistered(t, w, bufs, streams)
	})
}

// allReduceRegistered registers bufs[r], regBytes on rank r, with w's
// communicators, sums them in place with an all-reduce on streams, checks
// every rank's result, and deregisters them.
func (s *suite) allReduceRegistered(t *testing.T, w *world, bufs []cudart.DevicePtr, streams []cudart.Stream) {
	t.Helper()
	n := w.n()
	regs := make([]*nccl.Registration, n)
	in := make([][]float64, n)
	var group []nccl.Op
	for r := range n {
		var err error
		regs[r], err = w.comms[r].Register(bufs[r], regBytes)
		require.NoError(t, err, "Register rank %d's buffer", r)
		var b []byte
		b, in[r] = values(uint64(50+r), count, nccl.Int32)
		w.put(t, r, bufs[r], b)
		group = append(group, w.comms[r].AllReduceOp(bufs[r], bufs[r], count, nccl.Int32, nccl.Sum, streams[r]))
	}
	require.NoError(t, s.lib.Group(group...), "AllReduce on registered buffers")
	st := s.rt.(cudart.Streams)
	for r, d := range s.devs {
		require.NoError(t, st.StreamSynchronize(d, streams[r]), "StreamSynchronize on rank %d", r)
	}
	for r := range n {
		got := w.get(t, r, bufs[r], regBytes)
		for i := range uint64(count) {
			want := 0.0
			for q := range n {
				want += in[q][i]
			}
			require.Equal(t, want, decode(got, i, nccl.Int32), "rank %d element %d", r, i)
		}
		require.NoError(t, regs[r].Deregister(), "Deregister rank %d", r)
	}
}
