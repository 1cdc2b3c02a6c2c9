// Package cudapool pre-reserves CUDA memory for Go programs that know their
// buffers up front: inference pipelines that plan every buffer before the
// first request, batch jobs, servers, and the tests of all three.
//
// The library is in its subpackages:
//
//   - pool: the pool itself. One device arena (cudaMalloc) and one pinned host
//     arena (huge-page memory registered with cudaHostRegister by default),
//     taken once; requests queued with WantDevice and WantHost, placed at
//     256-byte-aligned offsets by Satisfy, locked by Commit, reset by
//     ReleaseAll, freed by Close. Buffers that declare their lifetimes
//     (pool.Live) share memory when they are never alive together. For
//     servers, pool.NewSlots places one request's layout N times, a slot
//     and a stream each, handed out by Acquire and returned by Release.
//   - kvcache: a paged KV cache on a pool buffer: fixed-size pages taken
//     by sequences as they grow, shared by prefix and by Fork (copy on
//     write), evicted least recently used, each a region memory tools see.
//   - plan: lifetime-aware offset planning as a pure function, no CUDA.
//   - vmem: growable device memory and vectors on CUDA virtual memory, behind
//     pool.WithGrowableDevice.
//   - pinned: fast pinning of host memory, and registration of the caller's
//     own []byte.
//   - cudart: the CUDA runtime and driver binding, one table of calls loaded
//     at run time, with no cgo: programs build without the CUDA toolkit and
//     run on machines without CUDA.
//   - cublas: cuBLAS GEMMs on pool memory, loaded the same way: handles bound
//     to a stream and a workspace from the pool (per slot with
//     Library.ForSlots, a pool.Attachment), computed on the CPU by the
//     fake; its groups of the conformance suite are cublas/conformance.
//   - choose: the runtime a program runs on, CUDA or the fake, from its
//     -runtime flag or $CUDAPOOL_RUNTIME; every binding takes what it
//     returns as the runtime it wraps (cudart.As).
//   - cudart/cudarttest: a fake CUDA runtime with real bytes behind it, as
//     strict as CUDA, with fault injection and leak checks, so users test
//     their own code without a GPU; it imports no testing package.
//   - cudart/cudarttest/conformance: the suite every runtime passes, the
//     fake in CI and real CUDA on a GPU host; a library adds its groups
//     (WithGroups).
//   - align: overflow-checked alignment arithmetic.
//
// A minimal program:
//
//	rt, err := choose.Open("")        // CUDA or the fake; in tests: rt := cudarttest.Open(t)
//	p, err := pool.New(rt, pool.WithDeviceBytes(1<<30), pool.WithHostBytes(256<<20))
//	defer p.Close()
//	in, err := p.WantHost(4<<20, pool.Name("input"))
//	act, err := p.WantDevice(16<<20, pool.Name("activations"))
//	err = p.Commit()
//	buf, err := in.Bytes()            // pinned host memory
//	ptr, err := act.Ptr()             // device address
//	fmt.Println(p.Layout())           // every buffer, as a table
//
// The README is the place to start; docs/measured.md has the measured figures.
package cudapool
