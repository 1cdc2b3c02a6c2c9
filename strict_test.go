package cudapool_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/record"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// A user's test, written as the README writes it, with no option: a write
// past a pool buffer into bytes no buffer owns fails the call, naming the
// buffer and its exact size, on both of the fakes a test is told to use.
func TestStrictByDefault(t *testing.T) {
	t.Setenv(cudarttest.EnvRuntime, "fake")
	for _, tc := range []struct {
		name   string
		sizes  []uint64 // buffers placed in this order, named b0, b1, ...
		write  uint64   // bytes copied into b0
		opts   []pool.Option
		caught string // "" when no tool can see it
	}{
		{"one byte into padding", []uint64{100, 4096}, 101, nil, `it is byte 0 past the end of "b0" (100 B)`},
		{"one byte past the last buffer", []uint64{4097}, 4098, nil, `it is byte 0 past the end of "b0" (4097 B)`},
		{"into the next buffer", []uint64{4096, 4096}, 4097, nil, ""},
		{"into the next buffer, with guards", []uint64{4096, 4096}, 4097, []pool.Option{pool.WithGuards(1)},
			`it is byte 0 past the end of "b0" (4.0 KiB)`},
	} {
		for name, open := range map[string]func(t *testing.T) cudart.Full{
			"Open":     func(t *testing.T) cudart.Full { return cudarttest.Open(t) },
			"NewFakeT": func(t *testing.T) cudart.Full { return cudarttest.NewFakeT(t) },
		} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				rt := open(t)
				p := pooltest.New(t, rt, append([]pool.Option{pool.WithDeviceBytes(1 << 20), pool.WithHostBytes(0)}, tc.opts...)...)
				var first *pool.Buffer
				for i, n := range tc.sizes {
					b := pooltest.Device(t, p, n, pool.Name("b"+string(rune('0'+i))))
					if first == nil {
						first = b
					}
				}
				require.NoError(t, p.Commit())
				ptr := pooltest.Ptr(t, first)
				src := make([]byte, tc.write)
				err := rt.Memcpy(p.Device(), cudart.DeviceMem(ptr, tc.write), cudart.HostMem(src), cudart.HostToDevice)
				if tc.caught == "" {
					assert.NoError(t, err, "the next buffer's bytes are a live buffer's: invisible to an address-based check")
					return
				}
				require.ErrorIs(t, err, cudart.ErrIllegalAddress)
				assert.ErrorContains(t, err, tc.caught)
			})
		}
	}
}

// A pool that is never closed is reported by its arena's name and by the
// line of the test that made it, whether or not memcheck is on.
func TestLeakReportNamesTheArenaAndWhereItWasMade(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []cudarttest.Option
		want string
	}{
		{"memcheck", nil, `"cudapool device arena (device 0)" was never closed (a memory heap of 1.0 MiB at 0x200000000000, made by pool.New called at strict_test.go:%d in github.com/cudapool/cudapool_test.TestLeakReportNamesTheArenaAndWhereItWasMade.func1); its memory: device memory 0x200000000000 (1.0 MiB) from cudaMalloc (call #%d)`},
		{"without memcheck", []cudarttest.Option{cudarttest.WithoutMemcheck()}, `device memory 0x200000000000 (1.0 MiB) from cudaMalloc (call #%[2]d), made by pool.New called at strict_test.go:%[1]d in github.com/cudapool/cudapool_test.TestLeakReportNamesTheArenaAndWhereItWasMade.func1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &record.TB{}
			f := cudarttest.NewFakeT(rec, tc.opts...)
			_, _, line, _ := runtime.Caller(0)
			_, err := pool.New(f, pool.WithDeviceBytes(1<<20), pool.WithHostBytes(0))
			require.NoError(t, err)
			calls := len(f.Calls())
			rec.RunCleanups()
			require.Empty(t, rec.Fatals)
			require.Len(t, rec.Errors, 1)
			assert.Contains(t, rec.Errors[0], fmt.Sprintf(tc.want, line+1, calls))
			assert.Equal(t, 1, strings.Count(rec.Errors[0], "made by"), "one origin a leak")
		})
	}
}
