package nccl

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// instant is a backend whose every call succeeds at once: what remains of
// a call through it is the binding's own cost.
type instant struct{}

func (instant) Do(fs []ncclabi.Frame) (int, error) {
	for i := range fs {
		fs[i].Result, fs[i].Out = ncclabi.Success, 0
	}
	return len(fs), nil
}

func (instant) Has(ncclabi.Call) bool { return true }

// BenchmarkGroupOverhead times what the binding adds to a group of one
// all-reduce a rank over 4 devices, as tp's -bench-allreduce posts it, on
// each kind of communicator: NCCL's calls return at once, so the time is
// the binding's (its locks, frames, the blocking call's goroutine and the
// non-blocking one's poll), and so are the allocations.
func BenchmarkGroupOverhead(b *testing.B) {
	for _, inline := range []bool{false, true} {
		b.Run(kind(inline), func(b *testing.B) {
			l := &Library{be: instant{}, path: "instant"}
			const n = 4
			ops := make([]Op, n)
			for d := range n {
				c := l.newComm(uintptr(0x100+d), d, d, n, commConfig{timeout: DefaultTimeout, inline: inline})
				ops[d] = c.AllReduceOp(0x1000, 0x2000, 4, Float32, Sum, 0)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Group(ops...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGroupAllocatesNothing: a group's call allocates nothing of the
// binding's, on either kind of communicator, once its pools are warm.
func TestGroupAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so allocations cannot be counted")
	}
	for _, inline := range []bool{false, true} {
		l := &Library{be: instant{}, path: "instant"}
		ops := make([]Op, 2)
		for d := range ops {
			c := l.newComm(uintptr(0x100+d), d, d, len(ops), commConfig{timeout: DefaultTimeout, inline: inline})
			ops[d] = c.AllReduceOp(0x1000, 0x2000, 4, Float32, Sum, 0)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := l.Group(ops...); err != nil {
				panic(err)
			}
		})
		assert.Zero(t, allocs, kind(inline))
	}
}
