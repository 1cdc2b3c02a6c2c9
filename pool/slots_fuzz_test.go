package pool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// FuzzSlots decodes bytes into a layout and a slot count, and a sequence of
// operations on the Slots: Acquire, Release, work queued on a held slot, a
// CUDA call made to fail, a device reset, Close. After every operation it
// checks what issue 27 found broken: no two held slots share a byte of a
// per-request buffer, InUse + Ready + Draining is the number of slots, a
// held slot's buffers answer ErrDeviceReset once the device was reset; and
// at the end that Close, called until it returns nil, leaves nothing
// behind. A layout NewSlots refuses must be one it cannot serve: the same
// Profile shared and per request.
//
// Byte 0: the slot count (1 to 8), bit 3 a shared profile, bit 4 that
// profile also given per request, bits 5-7 the size of the buffers in KiB.
// Every 2 bytes after it are one operation, at most 48 of them.
func FuzzSlots(f *testing.F) {
	f.Add([]byte{0x12, 0, 0, 0, 1, 3, 0, 1, 0})
	f.Add([]byte{0x1a}) // a profile shared and per request
	f.Add([]byte{0x0b, 0, 0, 2, 0, 1, 0, 4, 0, 0, 0})
	f.Add([]byte{0x23, 0, 0, 0, 1, 5, 2, 1, 0, 1, 1, 6, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		fk := cudarttest.NewFake(cudarttest.WithMemcheck())
		n, cfg := int(data[0]&7)+1, data[0]
		size := uint64(cfg>>5+1) << 10
		small, big := pool.NewProfile("small"), pool.NewProfile("big")
		smallX := must(small.Device(size, pool.Name("x")))
		bigX := must(big.Device(2*size, pool.Name("x")))
		for _, pr := range []*pool.Profile{small, big} {
			must(pr.Host(size, pool.Name("in")))
		}
		layout := pool.SlotLayout{Profiles: []*pool.Profile{small, big}}
		if cfg&8 != 0 {
			layout.Shared = pool.NewProfile("shared")
			must(layout.Shared.Device(size, pool.Name("weights")))
			if cfg&16 != 0 {
				layout.Profiles = append(layout.Profiles, layout.Shared)
			}
		}
		s, err := pool.NewSlots(fk, n, layout)
		if cfg&24 == 24 {
			require.ErrorIs(t, err, pool.ErrInvalidRequest, "one Profile shared and per request")
			require.True(t, fk.Live().Empty())
			return
		}
		require.NoError(t, err)
		var held []pool.Slot
		reset, closed := false, false
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ops := data[1:]
		for i := 0; i+1 < len(ops) && i < 96; i += 2 {
			op, arg := ops[i]%7, int(ops[i+1])
			switch op {
			case 0, 1: // Acquire, unless every slot is held: it would wait
				if st := s.Stats(); st.InUse == st.Slots && !reset && !closed {
					continue
				}
				sl, err := s.Acquire(ctx, []string{"small", "big"}[op])
				switch {
				case closed:
					require.ErrorIs(t, err, pool.ErrClosed)
				case reset:
					require.ErrorIs(t, err, pool.ErrDeviceReset)
				case err == nil:
					held = append(held, sl)
				}
			case 2: // Release
				if len(held) == 0 {
					continue
				}
				k := arg % len(held)
				err := s.Release(held[k])
				held = append(held[:k], held[k+1:]...)
				if closed {
					require.ErrorIs(t, err, pool.ErrClosed)
				} else if reset {
					require.NoError(t, err, "Release after a reset")
				}
			case 3: // work queued on a held slot
				if len(held) > 0 && !reset && !closed {
					queueWork(t, fk, held[arg%len(held)])
				}
			case 4: // the next call fails
				require.NoError(t, fk.FailNth(arg%4+1, 999))
			case 5: // a plain reset
				fk.ClearFaults()
				if !closed && fk.DeviceReset(0) == nil {
					reset = true
				}
			case 6:
				fk.ClearFaults()
				_ = s.Close()
				closed = true
			}
			fk.ClearFaults()
			if !closed {
				checkSlots(t, s, held, map[string]pool.Ref{"small": smallX, "big": bigX}, reset)
			}
		}
		fk.ClearFaults()
		err = s.Close()
		for tries := 0; err != nil; tries++ {
			require.Less(t, tries, 4*n+8, "Close keeps failing: %v", err)
			if reset {
				require.ErrorIs(t, err, pool.ErrDeviceReset)
				reset = false // said once
			}
			err = s.Close()
		}
		require.NoError(t, fk.CheckLeaks())
	})
}

// checkSlots checks the Slots' counts against the slots held, and that the
// buffer x of every held slot (refs, by profile) answers: no two share a
// byte, or, after a reset, each says ErrDeviceReset.
func checkSlots(t *testing.T, s *pool.Slots, held []pool.Slot, refs map[string]pool.Ref, reset bool) {
	st := s.Stats()
	require.Equal(t, st.Slots, st.InUse+st.Ready+st.Draining, "%+v", st)
	require.Equal(t, len(held), st.InUse)
	type span struct{ start, end uint64 }
	var spans []span
	for _, sl := range held {
		r := refs[sl.Profile()]
		p, err := sl.Ptr(r)
		if reset {
			require.True(t, errors.Is(err, pool.ErrDeviceReset), "%v", err)
			continue
		}
		require.NoError(t, err)
		at := span{uint64(p), uint64(p) + r.Size()}
		for _, o := range spans {
			require.True(t, at.end <= o.start || o.end <= at.start, "two held slots share bytes: %+v and %+v", at, o)
		}
		spans = append(spans, at)
	}
}
