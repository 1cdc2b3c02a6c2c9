package conformance

import (
	"testing"

	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/nccl/internal/fakenccl"
)

// chargeStage is what a stage of Charge took of each device, in bytes of
// free memory (cudaMemGetInfo) lost, negative where it gave some back.
type chargeStage struct {
	name  string
	taken []int64
}

// testCharge measures, on every device, what NCCL takes outside any
// allocation the program sees, stage by stage: a communicator of every rank
// (InitAll), its first all-reduce, a second InitAll and its first
// all-reduce, a split of the first communicator and its first all-reduce,
// a blocking communicator (InitAll with WithInlineLaunch: an init, a split
// and the init's destroy, which leave a split's charge) and its first
// all-reduce, then the destroy of all four. It runs first in the suite, so that NCCL
// has done nothing yet in the process, as in the measurement the fake's
// charges come from. Every stage is logged in bytes ("nccl charge:") before
// any assertion, so a failed run still reports them. It asserts each
// stage within [½, 2] of the charge the fake takes for it, and what
// destroying them all does not give back within [½, 2] of
// fakenccl.KeptCharge (NCCL's kernels and static buffers, kept in the
// context), or 0 where NCCL was used before in the process, as cuBLAS's
// kernels are kept (cublas/conformance's BLASCharge): its first
// communicator then takes what a further one does, as the fake's model has
// it (not measured on a GPU).
func (s *suite) testCharge(t *testing.T) {
	w := newBuffers(t, s.rt, s.lib, s.devs, 8)
	n := w.n()
	free := func() []uint64 {
		fs := make([]uint64, n)
		for r, d := range s.devs {
			f, _, err := s.rt.MemGetInfo(d)
			require.NoError(t, err, "cudaMemGetInfo on device %d", d)
			fs[r] = f
		}
		return fs
	}
	var live []*nccl.Comm
	destroy := func() {
		for _, c := range live {
			if err := c.Destroy(); err != nil {
				t.Errorf("Destroy %v: %v", c, err)
			}
		}
		live = nil
	}
	t.Cleanup(destroy)
	allReduce := func(comms []*nccl.Comm, which string) {
		group := make([]nccl.Op, n)
		for r, c := range comms {
			group[r] = c.AllReduceOp(w.send[r], w.recv[r], 1, nccl.Int64, nccl.Sum, w.s[r])
		}
		require.NoError(t, s.lib.Group(group...), "the first all-reduce of the %s", which)
		w.sync(t)
	}

	base := free()
	last := base
	var stages []chargeStage
	mark := func(name string) {
		now := free()
		st := chargeStage{name: name, taken: make([]int64, n)}
		for r := range n {
			st.taken[r] = int64(last[r]) - int64(now[r])
		}
		stages = append(stages, st)
		last = now
	}
	first, err := s.lib.InitAll(s.devs)
	require.NoError(t, err, "InitAll")
	live = append(live, first...)
	mark("init")
	allReduce(first, "first communicator")
	mark("first all-reduce")
	second, err := s.lib.InitAll(s.devs)
	require.NoError(t, err, "a second InitAll")
	live = append(live, second...)
	mark("second init")
	allReduce(second, "second communicator")
	mark("second's first all-reduce")
	kids := make([]*nccl.Comm, n)
	errs := make([]error, n)
	onRanks(n, func(r int) { kids[r], errs[r] = first[r].Split(0, r) })
	for r := range n {
		require.NoError(t, errs[r], "Split on rank %d", r)
		live = append(live, kids[r])
	}
	mark("split")
	allReduce(kids, "split")
	mark("split's first all-reduce")
	inline, err := s.lib.InitAll(s.devs, nccl.WithInlineLaunch())
	require.NoError(t, err, "InitAll with WithInlineLaunch")
	live = append(live, inline...)
	mark("blocking init")
	allReduce(inline, "blocking communicator")
	mark("blocking's first all-reduce")
	destroy()
	mark("destroy")

	for _, st := range stages {
		for r, d := range s.devs {
			t.Logf("nccl charge: device %d, %d ranks, %s: %d B (%s)", d, n, st.name, st.taken[r], signed(st.taken[r]))
		}
	}
	for r, d := range s.devs {
		kept := int64(base[r]) - int64(last[r])
		t.Logf("nccl charge: device %d, %d ranks, kept after destroy: %d B (%s)", d, n, kept, signed(kept))
	}
	within := func(name string, got []int64, want uint64) {
		for r, d := range s.devs {
			assert.True(t, got[r] >= int64(want/2) && got[r] <= int64(2*want),
				"device %d, %s: took %d B (%s), not within [½, 2] of the fake's %s", d, name, got[r], signed(got[r]), bytesize.Exact(want))
		}
	}
	kept := make([]int64, n)
	for r := range n {
		kept[r] = int64(base[r]) - int64(last[r])
	}
	initCharge, firstCharge := uint64(fakenccl.InitCharge), uint64(fakenccl.FirstCharge)
	if kept[0] == 0 {
		initCharge, firstCharge = fakenccl.FurtherInitCharge, fakenccl.FurtherFirstCharge
	}
	within("init", stages[0].taken, initCharge)
	within("first all-reduce", stages[1].taken, firstCharge)
	within("second init", stages[2].taken, fakenccl.FurtherInitCharge)
	within("second's first all-reduce", stages[3].taken, fakenccl.FurtherFirstCharge)
	within("split", stages[4].taken, fakenccl.SplitCharge)
	within("split's first all-reduce", stages[5].taken, fakenccl.FurtherFirstCharge)
	within("blocking init", stages[6].taken, fakenccl.SplitCharge)
	within("blocking's first all-reduce", stages[7].taken, fakenccl.FurtherFirstCharge)
	for r, d := range s.devs {
		assert.True(t, kept[r] == 0 && kept[0] == 0 || kept[r] >= fakenccl.KeptCharge/2 && kept[r] <= 2*fakenccl.KeptCharge,
			"device %d: %d B (%s) not given back by destroying every communicator: want 0 (NCCL used before in the process, on every device) or within [½, 2] of the fake's %s",
			d, kept[r], signed(kept[r]), bytesize.Exact(fakenccl.KeptCharge))
	}
}

// signed is n in binary units, with its sign.
func signed(n int64) string {
	if n < 0 {
		return "-" + bytesize.Format(uint64(-n))
	}
	return bytesize.Format(uint64(n))
}
