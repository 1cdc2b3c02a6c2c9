// Command charge measures what cudaMalloc takes from a device's free memory
// (cudaMemGetInfo before and after) for allocations of one size, one at a
// time and many together, and what cudaFree gives back: the figures the
// fake's charging is held to.
//
//	go run ./examples/charge [-runtime=auto|cuda|fake] [-async]
//
// -async measures cudaMallocAsync on the default stream instead, freed with
// cudaFreeAsync and a synchronisation, under the default pool's release
// threshold (0: the pool gives memory back at each synchronisation).
//
// A first one-byte cudaMalloc is made before any measurement and kept: CUDA
// opens the first chunk for small allocations with it. Each row then
// allocates count buffers of size bytes, reads the drop in free memory
// ("charged"), frees them all and reads how much of it came back
// ("returned"). "stride" is the median distance between the addresses of
// buffers allocated one after another.
package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/cli"
)

const dev = 0

const (
	kib = 1 << 10
	mib = 1 << 20
)

// row is one measurement: count allocations of size bytes.
type row struct {
	count int
	size  uint64
}

var rows = []row{
	{1, 1}, {1, 256}, {1, 4 * kib}, {1, 64 * kib}, {1, 512 * kib}, {1, mib}, {1, mib + 1}, {1, mib + mib/2},
	{1, 2*mib - 1}, {1, 2 * mib}, {1, 2*mib + 1}, {1, 3 * mib}, {1, 5 * mib},
	{1000, 1}, {1000, 256}, {1000, 512}, {1000, 1000}, {1000, 4 * kib}, {1000, 64 * kib},
	{100, 256 * kib}, {20, 512 * kib}, {20, mib}, {20, mib + 1}, {20, mib + mib/2}, {20, 2*mib - 1},
	{20, 2 * mib}, {20, 2*mib + 1}, {20, 3 * mib},
}

func main() { cli.Main(run) }

// about is what -h prints before the flags.
const about = `charge measures what cudaMalloc takes from free memory (cudaMemGetInfo) for
allocations of one size, one at a time and many together, and what cudaFree
gives back.`

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("charge", about, stderr)
	which := cmd.Runtime()
	async := cmd.Bool("async", false, "measure cudaMallocAsync and cudaFreeAsync instead")
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	a := allocator{rt: rt, async: *async}
	if err := measure(rt, a, stdout); err != nil {
		return cmd.Fail(1, err)
	}
	return 0
}

// allocator is cudaMalloc and cudaFree, or their stream-ordered kin.
type allocator struct {
	rt    cudart.Full
	async bool
}

func (a allocator) name() string {
	if a.async {
		return "cudaMallocAsync"
	}
	return "cudaMalloc"
}

func (a allocator) malloc(size uint64) (cudart.DevicePtr, error) {
	if a.async {
		return a.rt.MallocAsync(dev, size, 0)
	}
	return a.rt.Malloc(dev, size)
}

// freeAll frees ptrs, and waits for the stream-ordered frees.
func (a allocator) freeAll(ptrs []cudart.DevicePtr) error {
	var errs []error
	for _, p := range ptrs {
		if a.async {
			errs = append(errs, a.rt.FreeAsync(dev, p, 0))
		} else {
			errs = append(errs, a.rt.Free(dev, p))
		}
	}
	if a.async {
		errs = append(errs, a.rt.StreamSynchronize(dev, 0))
	}
	return errors.Join(errs...)
}

func measure(rt *choose.Runtime, a allocator, stdout io.Writer) (err error) {
	first, err := a.malloc(1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.freeAll([]cudart.DevicePtr{first})) }()
	fmt.Fprintf(stdout, "runtime: %s\n%s\n\n", rt.Description, a.name())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "count\tsize\trequested\tcharged\tcharged B\tratio\treturned\tstride\t")
	for _, r := range rows {
		charged, returned, stride, err := one(rt, a, r)
		if err != nil {
			return fmt.Errorf("%d x %d B: %w", r.count, r.size, err)
		}
		req := uint64(r.count) * r.size
		fmt.Fprintf(tw, "%d\t%d B\t%s\t%s\t%d\t%.2f\t%s\t%d\t\n", r.count, r.size, humanize.IBytes(req), humanize.IBytes(charged), charged, float64(charged)/float64(req), humanize.IBytes(returned), stride)
	}
	return tw.Flush()
}

// one allocates r, frees it, and reports the drop in free memory, what came
// back, and the median address stride.
func one(rt cudart.Runtime, a allocator, r row) (charged, returned, stride uint64, err error) {
	before, _, err := rt.MemGetInfo(dev)
	if err != nil {
		return 0, 0, 0, err
	}
	ptrs := make([]cudart.DevicePtr, 0, r.count)
	defer func() { err = errors.Join(err, a.freeAll(ptrs)) }()
	for range r.count {
		p, err := a.malloc(r.size)
		if err != nil {
			return 0, 0, 0, err
		}
		ptrs = append(ptrs, p)
	}
	during, _, err := rt.MemGetInfo(dev)
	if err != nil {
		return 0, 0, 0, err
	}
	var gaps []uint64
	for i := 1; i < len(ptrs); i++ {
		if ptrs[i] > ptrs[i-1] {
			gaps = append(gaps, uint64(ptrs[i]-ptrs[i-1]))
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		stride = gaps[len(gaps)/2]
	}
	err = a.freeAll(ptrs)
	ptrs = nil
	if err != nil {
		return 0, 0, 0, err
	}
	after, _, err := rt.MemGetInfo(dev)
	if err != nil {
		return 0, 0, 0, err
	}
	return before - during, after - during, stride, nil
}
